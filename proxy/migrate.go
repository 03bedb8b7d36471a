package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// migrateOptions are the flags of the migrate commands.
type migrateOptions struct {
	kubeconfig    string
	context       string
	namespaces    []string
	dryRun        bool
	grace         time.Duration
	relistGrace   time.Duration
	acknowledged  bool
	retireTimeout time.Duration
	overlap       int
}

func newMigrateCommand() *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move hosted-control-plane namespaces' CAPI objects between the upstream and the private groups",
		Long: `Move the Cluster API objects of hosted-control-plane namespaces from the upstream groups
(cluster.x-k8s.io & co.) to HyperShift's private groups, or back, one namespace at a time, while every
controller keeps running through the proxies (package migration; docs/migration.md).

  adopt     label a namespace whose objects are in the upstream groups so that proxies serve it from there
  run       migrate a namespace to the private groups, or finish a migration an earlier run began
  rollback  move a migrated namespace back to the upstream groups
  status    show where namespaces are

Unlike the proxy, these commands use the kubeconfig's credentials (the current context, or the in-cluster
service account): they talk straight to kube-apiserver, never through a proxy, and need to read and write
the mapped kinds of both groups, patch Namespaces, list and patch every namespaced resource, and list
leases (the proxies' acknowledgements).
A run that stops (killed, the apiserver gone) is finished by running the same command again.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	fs := cmd.PersistentFlags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account).")
	fs.StringVar(&o.context, "context", "", "The kubeconfig context to use.")
	fs.StringSliceVarP(&o.namespaces, "namespace", "n", nil, "Hosted-control-plane namespaces, moved one after the other, each one's wait for the garbage collector overlapping the next ones' moves (repeat or separate with commas).")

	run := &cobra.Command{
		Use:   "run --namespace NS [--dry-run]",
		Short: "Migrate namespaces to the private groups (with --dry-run: print the plan, change nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.move(cmd, translate.ToPrivate)
		},
	}
	rollback := &cobra.Command{
		Use:   "rollback --namespace NS [--dry-run]",
		Short: "Move namespaces back to the upstream groups (with --dry-run: print the plan, change nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.move(cmd, translate.ToUpstream)
		},
	}
	for _, c := range []*cobra.Command{run, rollback} {
		c.Flags().BoolVar(&o.dryRun, "dry-run", false, "Print the objects to move and the ownerReferences to re-point; change nothing.")
		c.Flags().DurationVar(&o.grace, "grace-period", migration.DefaultGrace, "Wait after each change of the serving label for the proxies to follow it (at most, while they acknowledge it: --wait-for-acknowledgements).")
		c.Flags().DurationVar(&o.relistGrace, "relist-grace-period", migration.DefaultRelistGrace, "Keep writes held this long after the proxies followed the change to the copies (which ended the namespace's watches), for the clients whose watches ended to list the namespace again from the copies; the old objects are retired meanwhile. Client-go's reflector lists again 0.8-1.6 s after its first watch ended in two minutes. 0 does not wait.")
		c.Flags().BoolVar(&o.acknowledged, "wait-for-acknowledgements", true, "End the wait after a change of the serving label once every live proxy's Lease acknowledged it, rather than after the whole --grace-period (which still bounds it, and is waited whole when no proxy publishes a Lease or one expired). Set it to false while proxies that publish no Lease (older ones) still serve beside ones that do: theirs would stand in for those. Needs list on leases, cluster-wide.")
		c.Flags().DurationVar(&o.retireTimeout, "retire-timeout", migration.DefaultRetireTimeout, "How long to wait for the garbage collector to remove one more of the retired objects before giving up.")
		c.Flags().IntVar(&o.overlap, "gc-overlap", migration.DefaultOverlap, "With several namespaces: how many namespaces' waits for the garbage collector may run beside the next namespace's move (each namespace's writes are held alone).")
	}
	adopt := &cobra.Command{
		Use:   "adopt --namespace NS",
		Short: "Label namespaces whose CAPI objects are in the upstream groups so that proxies serve them from there",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := o.migrator(nil)
			if err != nil {
				return err
			}
			return o.each(cmd.Context(), func(ctx context.Context, ns string) error {
				if err := m.Adopt(ctx, ns); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "namespace %s: %s=%s\n", ns, serving.Label, serving.Upstream)
				return nil
			})
		},
	}
	status := &cobra.Command{
		Use:   "status [--namespace NS]",
		Short: "Show each namespace's serving mode, migration phase and objects (without --namespace: every labelled namespace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.status(cmd)
		},
	}
	cmd.AddCommand(run, rollback, adopt, status)
	return cmd
}

// The client rate limit of the migrate commands. Each snapshot of a namespace lists every mapped kind in
// both sets of groups (about 120 LISTs with the providers' CRDs, nearly all empty), and re-pointing
// ownerReferences lists every namespaced resource; most of them run while the namespace's writes are
// held. At 50 requests/s those lists alone held a namespace's writes for about 10 s
// (docs/performance.md, "Migrating many namespaces"); the apiserver's priority and fairness still
// applies.
const (
	migrateQPS   = 200
	migrateBurst = 400
)

func (o *migrateOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = migrateQPS, migrateBurst
	return cfg, nil
}

func (o *migrateOptions) migrator(progress func(migration.Event)) (*migration.Migrator, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	grace := o.grace
	if grace == 0 {
		grace = -1 // --grace-period=0: no wait (migration.Options reads 0 as its default)
	}
	relistGrace := o.relistGrace
	if relistGrace == 0 {
		relistGrace = -1 // --relist-grace-period=0: no wait
	}
	return migration.New(migration.Options{Config: cfg, Grace: grace, RelistGrace: relistGrace, IgnoreAcknowledgements: !o.acknowledged,
		RetireTimeout: o.retireTimeout, Overlap: o.overlap, Progress: progress})
}

// each runs fn for every --namespace in turn, stopping at the first error, on SIGINT or SIGTERM.
func (o *migrateOptions) each(ctx context.Context, fn func(context.Context, string) error) error {
	if len(o.namespaces) == 0 {
		return errors.New("--namespace is required")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	for _, ns := range o.namespaces {
		if err := fn(ctx, ns); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return nil
}

// move runs (or plans, with --dry-run) a move of every --namespace: one after the other, each namespace's
// wait for the garbage collector overlapping the next ones' moves (migration.Migrator.MigrateNamespaces).
func (o *migrateOptions) move(cmd *cobra.Command, dir translate.Direction) error {
	out := cmd.OutOrStdout()
	display := newProgressDisplay(cmd.ErrOrStderr())
	m, err := o.migrator(display.event)
	if err != nil {
		return err
	}
	if o.dryRun {
		return o.each(cmd.Context(), func(ctx context.Context, ns string) error {
			plan, err := m.Plan(ctx, ns, dir)
			if err != nil {
				return err
			}
			plan.Print(out)
			return nil
		})
	}
	if len(o.namespaces) == 0 {
		return errors.New("--namespace is required")
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	moveAll := m.MigrateNamespaces
	if dir.String() != translate.ToPrivate.String() {
		moveAll = m.RollbackNamespaces
	}
	err = moveAll(ctx, o.namespaces, func(ns string, err error) {
		display.done()
		if err == nil {
			fmt.Fprintf(out, "namespace %s: %s complete\n", ns, dir)
		}
	})
	if err != nil {
		return fmt.Errorf("%w (each namespace's progress is recorded on the cluster: run the same command again to resume)", err)
	}
	return nil
}

func (o *migrateOptions) status(cmd *cobra.Command) error {
	m, err := o.migrator(nil)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	namespaces := o.namespaces
	if len(namespaces) == 0 {
		cfg, err := o.restConfig()
		if err != nil {
			return err
		}
		kube, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return err
		}
		list, err := kube.Namespaces().List(ctx, metav1.ListOptions{LabelSelector: serving.Label})
		if err != nil {
			return err
		}
		for _, ns := range list.Items {
			namespaces = append(namespaces, ns.Name)
		}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tSERVE-FROM\tPHASE\tDIRECTION\tUPSTREAM\tPRIVATE\tPAUSED")
	for _, ns := range namespaces {
		s, err := m.Status(ctx, ns)
		if err != nil {
			return err
		}
		mode := string(s.Mode)
		if !s.Labelled {
			mode += " (no label)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\n", s.Namespace, mode, orNone(string(s.Phase)), orNone(s.Direction), s.Upstream, s.Private, s.Paused)
	}
	return w.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// progressDisplay shows a move's progress: one line rewritten in place on a terminal, structured log lines
// (klog) otherwise.
type progressDisplay struct {
	// mu serializes event and done: moves of several namespaces report from several goroutines.
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	last     string
}

func newProgressDisplay(w io.Writer) *progressDisplay {
	d := &progressDisplay{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			d.terminal = true
		}
	}
	return d
}

func (d *progressDisplay) event(e migration.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.terminal {
		msg := e.Message
		if msg == "" {
			msg = "Migration step"
		}
		klog.InfoS(msg, e.KeysAndValues()...)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %-9s %-8s", e.Namespace, e.Direction, e.Phase, e.Step)
	if e.Total > 0 {
		fmt.Fprintf(&b, " %d/%d", e.Done, e.Total)
	}
	if e.Object != "" {
		b.WriteString(" " + e.Object)
	} else if e.Message != "" {
		b.WriteString(" " + e.Message)
	}
	if e.Phase != "" && e.Phase != migration.Phase(d.last) && d.last != "" {
		fmt.Fprintln(d.w)
	}
	d.last = string(e.Phase)
	fmt.Fprintf(d.w, "\r\033[K%s", b.String())
}

// done ends the progress line.
func (d *progressDisplay) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.terminal && d.last != "" {
		fmt.Fprintln(d.w)
		d.last = ""
	}
}
