package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// watchSpec is one informer of a manager.
type watchSpec struct {
	gvr schema.GroupVersionResource
	// how the informer reads: dynamic (unstructured JSON, as controller-runtime's cache of a CRD kind or
	// CAPI's external object tracker), metadataOnly (PartialObjectMetadata in protobuf, controller-runtime's
	// WatchesMetadata) or typed (client-go's typed Secret informer).
	metadataOnly, typed bool
	// labelSelector restricts the informer as CAPI's cache options do.
	labelSelector string
}

// capiManagerWatches is what CAPI v1.13's core manager caches in its namespace with its default feature
// gates (MachinePool, ClusterResourceSet; not ClusterTopology or RuntimeSDK): every core kind its
// controllers watch or read through the cache, the AWS infrastructure kinds its external object tracker
// and unstructured cached client read, the Secrets carrying a cluster-name label (setup.ManagerCacheOptions),
// and the metadata-only Secrets and ConfigMaps of the ClusterResourceSet controller.
var capiManagerWatches = []watchSpec{
	{gvr: clusters}, {gvr: machinesGVR}, {gvr: machineSets}, {gvr: machineDeployments}, {gvr: machineHealthChecks},
	{gvr: machinePools}, {gvr: machineDrainRules}, {gvr: resourceSets}, {gvr: resourceSetBindings},
	{gvr: awsClusters}, {gvr: awsMachines}, {gvr: awsMachineTemplates},
	{gvr: secrets, typed: true, labelSelector: clusterv1.ClusterNameLabel},
	{gvr: secrets, metadataOnly: true}, {gvr: configMaps, metadataOnly: true},
}

// capaManagerWatches is what CAPA v2.13's manager (the AWS provider) caches in its namespace: its
// AWSCluster, AWSMachine and AWSMachineTemplate controllers' kinds and the CAPI kinds they watch
// (KubeadmControlPlane since its CRD is installed).
var capaManagerWatches = []watchSpec{
	{gvr: awsClusters}, {gvr: awsMachines}, {gvr: awsMachineTemplates},
	{gvr: clusters}, {gvr: machinesGVR}, {gvr: machineDeployments}, {gvr: machineSets}, {gvr: kubeadmControlPlanes},
}

// operatorWatches is what HyperShift's operator watches across every namespace: the CAPI kinds of its
// NodePool controller and the provider's machine kinds.
var operatorWatches = []watchSpec{
	{gvr: clusters}, {gvr: machinesGVR}, {gvr: machineSets}, {gvr: machineDeployments},
	{gvr: awsMachines}, {gvr: awsMachineTemplates},
}

// manager is one client process of the fleet: its own rest.Config, transport and connection.
type manager struct {
	name       string
	namespace  string // "" for cluster-wide
	dyn        dynamic.Interface
	metaClient metadata.Interface
	kube       kubernetes.Interface
	informers  []*informer
}

// informer is one informer of a manager.
type informer struct {
	m *manager
	// key is how the tracker names its requests.
	key string
	inf cache.SharedIndexInformer
	// machines is set for the informers of Machines: write->event latency is recorded at them.
	machines bool
	// id numbers the Machine informers (the watchers of writes).
	id int
}

// fleet is every manager of one leg: a CAPI manager and an AWS provider per hosted-control-plane
// namespace, and HyperShift's operator.
type fleet struct {
	managers []*manager
	// byNamespace[i] is the CAPI manager of namespace i (the writer of its Machines).
	byNamespace []*manager
	informers   []*informer
	watchers    []*informer // the Machine informers, by id
	tr          *tracker
	rec         *recorder
	private     bool
	t           legTarget
	// debug keeps what every write's response held (recorder.responses).
	debug bool
	// lastWrite is the number of the last write made, lastTurn of the writer's last turn (write).
	lastWrite, lastTurn int
	// busy says, by namespace and Machine (i*machines+j), whether a write is in flight; skipped counts the
	// turns skipped for it.
	busy    []atomic.Bool
	skipped atomic.Int64
	ctx     context.Context
	cancel  context.CancelFunc
}

// legTarget is where a fleet connects: url (the front), its CA, the token of every client, whether it
// speaks the private groups (the bare proxy, straight to the backend's CRDs) or the upstream ones (the
// capi-proxy), and each client's rate limit.
type legTarget struct {
	url, caFile, token string
	private            bool
	qps                float32
	burst              int
}

// gvr is the resource a client of t reads for the upstream resource g.
func (t legTarget) gvr(g schema.GroupVersionResource) schema.GroupVersionResource {
	if t.private {
		return privateGVR(g)
	}
	return g
}

// newFleet returns a fleet for namespaces hosted clusters that reads through t, with HyperShift's operator
// running and synced; addNamespaces adds the managers of the hosted clusters.
func newFleet(ctx context.Context, t legTarget, namespaces int, tr *tracker, rec *recorder) (*fleet, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &fleet{t: t, ctx: ctx, tr: tr, rec: rec, private: t.private, cancel: cancel, byNamespace: make([]*manager, namespaces)}
	if _, err := f.add("operator", "", operatorWatches); err != nil {
		cancel()
		return nil, err
	}
	if err := f.sync(0); err != nil {
		cancel()
		return nil, err
	}
	return f, nil
}

// addNamespaces starts the CAPI manager and the AWS provider of namespaces lo to hi-1, each with a
// transport and connection of its own (as separate processes have), and returns once every informer has
// synced.
func (f *fleet) addNamespaces(lo, hi int) error {
	from := len(f.informers)
	for i := lo; i < hi; i++ {
		ns := namespaceName(i)
		m, err := f.add("capi/"+ns, ns, capiManagerWatches)
		if err != nil {
			return err
		}
		f.byNamespace[i] = m
		if _, err := f.add("capa/"+ns, ns, capaManagerWatches); err != nil {
			return err
		}
	}
	return f.sync(from)
}

// add builds a manager with the informers of specs.
func (f *fleet) add(name, ns string, specs []watchSpec) (*manager, error) {
	m, err := newManager(f.t, name, ns, f.tr)
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		inf := m.newInformer(f.t, s)
		if inf.machines {
			inf.id = len(f.watchers)
			f.watchers = append(f.watchers, inf)
			if _, err := inf.inf.AddEventHandler(f.rec.handler(inf.id)); err != nil {
				return nil, err
			}
		}
		m.informers = append(m.informers, inf)
		f.informers = append(f.informers, inf)
	}
	f.managers = append(f.managers, m)
	f.rec.setWatchers(f.watchers)
	return m, nil
}

// sync starts the informers from index from on and waits until they have synced.
func (f *fleet) sync(from int) error {
	for _, inf := range f.informers[from:] {
		go inf.inf.RunWithContext(f.ctx)
	}
	for _, inf := range f.informers[from:] {
		if !cache.WaitForCacheSync(f.ctx.Done(), inf.inf.HasSynced) {
			return fmt.Errorf("informer %s did not sync", inf.key)
		}
	}
	return nil
}

// stop ends every informer.
func (f *fleet) stop() { f.cancel() }

// newManager returns a manager whose clients share one transport of their own: a dial function of its
// own keeps client-go from sharing the transport (and connection) of another config (transport.tlsCache
// does not cache configs with a Dial), as separate manager processes do not share one.
func newManager(t legTarget, name, ns string, tr *tracker) (*manager, error) {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg := &rest.Config{
		Host: t.url, BearerToken: t.token, TLSClientConfig: rest.TLSClientConfig{CAFile: t.caFile},
		QPS: t.qps, Burst: t.burst, UserAgent: "bench-scale/" + name,
		Dial: dialer.DialContext,
	}
	cfg.Wrap(tr.wrap(name))
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	m := &manager{name: name, namespace: ns}
	if m.dyn, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfigAndClient(metadata.ConfigFor(cfg), hc)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	m.metaClient, m.kube = meta, kube
	return m, nil
}

func (m *manager) newInformer(t legTarget, s watchSpec) *informer {
	gvr := t.gvr(s.gvr)
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = s.labelSelector }
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	inf := &informer{m: m, machines: s.gvr == machinesGVR}
	switch {
	case s.typed:
		inf.inf = coreinformers.NewFilteredSecretInformer(m.kube, m.namespace, 0, indexers, tweak)
	case s.metadataOnly:
		inf.inf = metadatainformer.NewFilteredMetadataInformer(m.metaClient, gvr, m.namespace, 0, indexers, tweak).Informer()
	default:
		inf.inf = dynamicinformer.NewFilteredDynamicInformer(m.dyn, gvr, m.namespace, 0, indexers, tweak).Informer()
	}
	inf.key = requestKey(m.name, collectionPath(gvr, m.namespace), s.labelSelector, s.metadataOnly)
	return inf
}

// collectionPath is the path of gvr's collection in namespace ns (every namespace if empty).
func collectionPath(gvr schema.GroupVersionResource, ns string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if ns != "" {
		p += "/namespaces/" + ns
	}
	return p + "/" + gvr.Resource
}

// seqAnnotation carries the number of the write that set it.
const seqAnnotation = "bench.capi-proxy.hypershift.openshift.io/seq"

// seqOf returns the write number obj carries, 0 if none.
func seqOf(obj any) int {
	o, ok := obj.(metav1.Object)
	if !ok {
		return 0
	}
	k, _ := strconv.Atoi(o.GetAnnotations()[seqAnnotation])
	return k
}

// rvOf returns obj's resourceVersion as a number (etcd's revision), 0 if it has none.
func rvOf(obj any) uint64 {
	o, ok := obj.(metav1.Object)
	if !ok {
		return 0
	}
	rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	return rv
}

// recorder records when each write was answered and when each Machine informer saw it.
type recorder struct {
	mu       sync.Mutex
	watchers []*informer
	// sent[k] is when write k was sent, answered[k] when its response came.
	sent, answered map[int]time.Time
	// wrote[k] is the namespace index and Machine of write k.
	wrote map[int][2]int
	// seen[{w, k}] is when watcher w first saw write k.
	seen map[[2]int]time.Time
	// duplicates counts writes a watcher saw again after having seen them; outOfOrder the updates whose
	// resourceVersion is older than the object's in the cache.
	duplicates, outOfOrder int
	events                 int
	// responses[k] says what write k's response held (with -debug).
	responses map[int]string
}

func newRecorder() *recorder {
	return &recorder{sent: map[int]time.Time{}, answered: map[int]time.Time{}, wrote: map[int][2]int{}, seen: map[[2]int]time.Time{},
		responses: map[int]string{}}
}

func (r *recorder) setWatchers(w []*informer) {
	r.mu.Lock()
	r.watchers = w
	r.mu.Unlock()
}

// reset forgets every write and sighting.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent, r.answered, r.wrote, r.seen = map[int]time.Time{}, map[int]time.Time{}, map[int][2]int{}, map[[2]int]time.Time{}
	r.duplicates, r.outOfOrder, r.events = 0, 0, 0
}

// handler is watcher w's event handler: an update whose write number differs from the cached object's is
// the sighting of that write (a relist's replace of an unchanged object is not); an update older than the
// cached object (by resourceVersion) is out of order, and a write seen again after another is a
// duplicate.
func (r *recorder) handler(w int) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			now := time.Now()
			k, was := seqOf(newObj), seqOf(oldObj)
			r.mu.Lock()
			defer r.mu.Unlock()
			if rvOf(newObj) < rvOf(oldObj) {
				r.outOfOrder++
			}
			if k == was || k == 0 {
				return // a relist's replace, or another change
			}
			r.events++
			key := [2]int{w, k}
			if _, dup := r.seen[key]; dup {
				r.duplicates++
				return
			}
			r.seen[key] = now
		},
	}
}

// answer records that write k (of namespace ns, Machine j), sent at sent, was answered at t.
func (r *recorder) answer(k, ns, j int, sent, t time.Time) {
	r.mu.Lock()
	r.sent[k] = sent
	r.answered[k] = t
	r.wrote[k] = [2]int{ns, j}
	r.mu.Unlock()
}

// latency is the write->event latencies, in ms, of the watchers of one namespace and of the
// cluster-wide ones: from the write's request (sent) and from its response (answered; negative where the
// event came first).
type latency struct {
	namespaced, clusterWide, namespacedAnswered, clusterWideAnswered []float64
	// writes are the writes' own latencies, from the request to the response.
	writes []float64
}

// tally counts the (write, watcher) pairs that were not seen.
type tally struct {
	// missing counts the pairs not seen, superseded those of them where the watcher saw a later write of
	// the same Machine instead (a relist delivers the latest state only).
	missing, superseded int
}

// latencies returns the latencies of every write answered, to a namespace for which include is true (every
// namespace if include is nil), at every watcher that covers its namespace, and the pairs not seen.
func (r *recorder) latencies(include func(ns int) bool) (l latency, t tally) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// latest[{w, ns, j}] is the latest write of Machine j of namespace ns that watcher w saw.
	latest := map[[3]int]int{}
	for key := range r.seen {
		w, k := key[0], key[1]
		if at, ok := r.wrote[k]; ok {
			m := [3]int{w, at[0], at[1]}
			latest[m] = max(latest[m], k)
		}
	}
	for k, at := range r.answered {
		i := r.wrote[k][0]
		if include != nil && !include(i) {
			continue
		}
		l.writes = append(l.writes, ms(at.Sub(r.sent[k])))
		ns := namespaceName(i)
		for _, w := range r.watchers {
			if w.m.namespace != "" && w.m.namespace != ns {
				continue
			}
			seen, ok := r.seen[[2]int{w.id, k}]
			if !ok {
				t.missing++
				if latest[[3]int{w.id, i, r.wrote[k][1]}] > k {
					t.superseded++
				}
				continue
			}
			fromSent, fromAnswer := ms(seen.Sub(r.sent[k])), ms(seen.Sub(at))
			if w.m.namespace == "" {
				l.clusterWide = append(l.clusterWide, fromSent)
				l.clusterWideAnswered = append(l.clusterWideAnswered, fromAnswer)
			} else {
				l.namespaced = append(l.namespaced, fromSent)
				l.namespacedAnswered = append(l.namespacedAnswered, fromAnswer)
			}
		}
	}
	return l, t
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
