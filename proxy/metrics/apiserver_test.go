package metrics

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestAPIServerText(t *testing.T) {
	long := `apiserver_storage_objects{resource="` + strings.Repeat("x", 40<<10) + `.cluster.hypershift.openshift.io"} 1` + "\n"
	in := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.hypershift.openshift.io",resource="machines",scope="resource",subresource="",verb="GET",version="v1beta2"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="machines",scope="resource",subresource="",verb="GET",version="v1beta2"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_storage_objects{resource="machines.infrastructure.cluster.hypershift.openshift.io"} 2
apiserver_storage_objects{resource="awsmachines.infrastructure.cluster.x-k8s.io"} 5
` + long + `no_newline_at_the_end{group="cluster.hypershift.openshift.io"} 1`
	want := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="machines",scope="resource",subresource="",verb="GET",version="v1beta2"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_storage_objects{resource="machines.infrastructure.cluster.x-k8s.io"} 2
` + strings.Replace(long, "hypershift.openshift.io", "x-k8s.io", 1) + `no_newline_at_the_end{group="cluster.x-k8s.io"} 1`
	for name, r := range map[string]io.Reader{"whole": strings.NewReader(in), "a byte at a time": iotest.OneByteReader(strings.NewReader(in))} {
		m := APIServerText(io.NopCloser(r))
		got, err := io.ReadAll(iotest.HalfReader(m))
		if err != nil || string(got) != want {
			t.Errorf("%s: %v\n got %q\nwant %q", name, err, got, want)
		}
	}
}
