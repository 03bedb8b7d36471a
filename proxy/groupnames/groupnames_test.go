package groupnames

import (
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    translate.Direction
		in   string
		want string
	}{
		{"qualified resource", translate.ToUpstream,
			`machines.cluster.hypershift.openshift.io "m1" not found`,
			`machines.cluster.x-k8s.io "m1" not found`},
		{"longer group that ends in a shorter one", translate.ToUpstream,
			`awsmachines.infrastructure.cluster.hypershift.openshift.io "a" is forbidden`,
			`awsmachines.infrastructure.cluster.x-k8s.io "a" is forbidden`},
		{"apiVersion in a sentence", translate.ToUpstream,
			`cluster.hypershift.openshift.io/v1beta1 MachineDeployment is deprecated; use cluster.hypershift.openshift.io/v1beta2 MachineDeployment`,
			`cluster.x-k8s.io/v1beta1 MachineDeployment is deprecated; use cluster.x-k8s.io/v1beta2 MachineDeployment`},
		{"Kind.group and end of sentence", translate.ToUpstream,
			`cloned from AWSMachineTemplate.infrastructure.cluster.hypershift.openshift.io.`,
			`cloned from AWSMachineTemplate.infrastructure.cluster.x-k8s.io.`},
		{"agent group", translate.ToUpstream,
			`group capi-provider.agent-install.hypershift.openshift.io`,
			`group capi-provider.agent-install.openshift.io`},
		{"not a mapped group: hypershift's own", translate.ToUpstream,
			`hostedclusters.hypershift.openshift.io "hc" not found`,
			`hostedclusters.hypershift.openshift.io "hc" not found`},
		{"a longer domain is another name", translate.ToUpstream,
			`cluster.hypershift.openshift.io.example.com and xcluster.hypershift.openshift.io`,
			`cluster.hypershift.openshift.io.example.com and xcluster.hypershift.openshift.io`},
		{"to private", translate.ToPrivate,
			`machines.cluster.x-k8s.io and bootstrap.cluster.x-k8s.io/v1beta2`,
			`machines.cluster.hypershift.openshift.io and bootstrap.cluster.hypershift.openshift.io/v1beta2`},
		{"nothing to do", translate.ToUpstream, `pods "p" not found`, `pods "p" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Replace(tc.d, tc.in); got != tc.want {
				t.Errorf("Replace(%s, %q)\n got %q\nwant %q", tc.d, tc.in, got, tc.want)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		d    translate.Direction
		in   string
		want bool
	}{
		{translate.ToUpstream, `{"apiVersion":"infrastructure.cluster.hypershift.openshift.io/v1beta2"}`, true},
		{translate.ToUpstream, `{"apiVersion":"capi-provider.agent-install.hypershift.openshift.io/v1beta1"}`, true},
		{translate.ToUpstream, `{"apiVersion":"cluster.x-k8s.io/v1beta2"}`, false},
		{translate.ToUpstream, `{"apiVersion":"hypershift.openshift.io/v1beta1"}`, false},
		{translate.ToPrivate, `{"apiVersion":"ipam.cluster.x-k8s.io/v1beta2"}`, true},
		{translate.ToPrivate, `{"apiVersion":"v1","kind":"Secret"}`, false},
	} {
		if got := Mentions(tc.d, []byte(tc.in)); got != tc.want {
			t.Errorf("Mentions(%s, %s) = %v, want %v", tc.d, tc.in, got, tc.want)
		}
	}
}

func TestSourcesLongestFirst(t *testing.T) {
	s := Sources(translate.ToUpstream)
	if len(s) != len(upstream.Groups) {
		t.Fatalf("Sources(ToUpstream) has %d names, want one per mapped group (%d): %v", len(s), len(upstream.Groups), s)
	}
	for i := 1; i < len(s); i++ {
		if len(s[i]) > len(s[i-1]) {
			t.Errorf("Sources not longest first: %q before %q", s[i-1], s[i])
		}
	}
}
