package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/install/crds"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
)

// installCRDsOptions are the flags of install-crds.
type installCRDsOptions struct {
	kubeconfig     string
	webhookURL     string
	webhookService string
	caBundleFile   string
	dryRun         bool
	timeout        time.Duration
	// admissionWebhooks are files or directories of webhook configurations (apis/private/webhooks).
	admissionWebhooks []string
}

func newInstallCRDsCommand() *cobra.Command {
	o := &installCRDsOptions{}
	cmd := &cobra.Command{
		Use:   "install-crds [flags] [FILE_OR_DIR...]",
		Short: "Install the private CRDs with their conversion webhook, and the private admission webhooks, pointed at this proxy",
		Long: `Install the private CRDs (apis/private/crds) with their conversion webhook pointed at the proxy:
the CRDs whose kinds convert by hub and spoke name a placeholder service; install-crds replaces it with
--webhook-url or --webhook-service and --ca-bundle-file, then creates each CRD or updates the one there,
and waits until all are Established. With --dry-run it prints the CRDs as YAML instead.

With --admission-webhooks (apis/private/webhooks) it also installs the admission webhook configurations
of the private groups, each webhook pointed at the proxy the same way: the host of --webhook-url (its
path is the conversion webhook's) or the service of --webhook-service, at the webhook's own path
(/admission/<manager>/...), with the same CA bundle. The proxy serves them when started with
--admission-webhook=<manager>=<URL> for each manager.

Unlike the proxy itself, install-crds uses the kubeconfig's credentials (the current context, or the
in-cluster service account without --kubeconfig): it needs to create and update CRDs.`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig to install with (its credentials are used); in-cluster configuration if empty.")
	fs.StringVar(&o.webhookURL, "webhook-url", "", "URL of the proxy's conversion webhook, e.g. https://10.0.0.5:8443"+conversion.Path+". Exclusive with --webhook-service.")
	fs.StringVar(&o.webhookService, "webhook-service", "", "Service in front of the proxy, as NAMESPACE/NAME[:PORT] (port 443 if omitted); the path is "+conversion.Path+". Exclusive with --webhook-url.")
	fs.StringVar(&o.caBundleFile, "ca-bundle-file", "", "PEM bundle of the certificate authorities that sign the proxy's serving certificate (the apiserver's system roots if empty).")
	fs.StringArrayVar(&o.admissionWebhooks, "admission-webhooks", nil, "File or directory of admission webhook configurations of the private groups (apis/private/webhooks) to install pointed at the proxy. Repeatable.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print the CRDs (and webhook configurations) as YAML instead of installing them.")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "How long to wait for each CRD to become Established.")
	return cmd
}

func (o *installCRDsOptions) webhook() (crds.Webhook, error) {
	w := crds.Webhook{URL: o.webhookURL}
	if o.webhookService != "" {
		svc, err := parseService(o.webhookService)
		if err != nil {
			return w, err
		}
		w.Service = svc
	}
	if o.caBundleFile != "" {
		data, err := os.ReadFile(o.caBundleFile)
		if err != nil {
			return w, fmt.Errorf("reading --ca-bundle-file: %w", err)
		}
		w.CABundle = data
	}
	return w, w.Validate()
}

// parseService parses NAMESPACE/NAME[:PORT].
func parseService(s string) (*apiextensionsv1.ServiceReference, error) {
	ns, rest, ok := strings.Cut(s, "/")
	name, portText, hasPort := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--webhook-service %q: want NAMESPACE/NAME[:PORT]", s)
	}
	path := conversion.Path
	svc := &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Path: &path}
	if hasPort {
		port, err := strconv.ParseInt(portText, 10, 32)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("--webhook-service %q: bad port %q", s, portText)
		}
		p := int32(port)
		svc.Port = &p
	}
	return svc, nil
}

func (o *installCRDsOptions) run(ctx context.Context, paths []string) error {
	if len(paths) == 0 && len(o.admissionWebhooks) == 0 {
		return errors.New("nothing to install: give CRD files or directories, or --admission-webhooks")
	}
	w, err := o.webhook()
	if err != nil {
		return err
	}
	var list []*apiextensionsv1.CustomResourceDefinition
	if len(paths) > 0 {
		if list, err = crds.Read(paths...); err != nil {
			return err
		}
		if len(list) == 0 {
			return errors.New("no CRDs found in " + strings.Join(paths, ", "))
		}
	}
	for _, crd := range list {
		crds.SetWebhook(crd, w)
	}
	var configs []client.Object
	if len(o.admissionWebhooks) > 0 {
		if configs, err = readWebhookConfigurations(o.admissionWebhooks...); err != nil {
			return err
		}
		for _, c := range configs {
			if err := pointWebhooks(c, w); err != nil {
				return err
			}
		}
	}
	if o.dryRun {
		if err := crds.Write(os.Stdout, list); err != nil {
			return err
		}
		return writeObjects(os.Stdout, configs)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if len(list) > 0 {
		if err := crds.Apply(ctx, c, list, o.timeout); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "installed %d CRDs\n", len(list))
	}
	if len(configs) > 0 {
		if err := applyObjects(ctx, c, configs); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "installed %d webhook configurations\n", len(configs))
	}
	return nil
}
