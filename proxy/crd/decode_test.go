package crd

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

// TestWriteDecoding covers how the checks of patches and updates read their bodies: as the apiserver
// does, with exact member names and the last of repeated members winning.
func TestWriteDecoding(t *testing.T) {
	n := New(routestesting.Table())
	const name = "machines.cluster.x-k8s.io"
	for _, tc := range []struct {
		name, mediaType, patch string
		forbidden              bool
	}{
		{"json patch: Path is not path", body.JSONPatch, `[{"op":"replace","path":"/spec/group","Path":"/metadata/labels/a","value":"x"}]`, true},
		{"json patch: From is not from", body.JSONPatch, `[{"op":"move","from":"/spec/scope","From":"/metadata/labels/b","path":"/metadata/labels/a"}]`, true},
		{"json patch: the last path wins", body.JSONPatch, `[{"op":"replace","path":"/metadata/labels/a","path":"/spec/group","value":"x"}]`, true},
		{"json patch: the last path wins, accepted", body.JSONPatch, `[{"op":"add","path":"/spec/group","path":"/metadata/labels/a","value":"x"}]`, false},
		{"json patch: Op is not op", body.JSONPatch, `[{"Op":"test","op":"replace","path":"/spec/group","value":"x"}]`, true},
		{"merge patch: Spec is not spec, accepted", body.MergePatch, `{"Spec":{"group":"x"},"metadata":{"labels":{"a":"b"}}}`, false},
		{"merge patch: a repeated spec", body.MergePatch, `{"spec":{"group":"x"},"spec":null}`, true},
		{"strategic merge patch of spec", body.StrategicMergePatch, `{"metadata":{},"spec":{"scope":"Cluster"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := n.Patch(name, "", tc.mediaType, []byte(tc.patch))
			if tc.forbidden != apierrors.IsForbidden(err) || !tc.forbidden && err != nil {
				t.Errorf("Patch = %s, %v; want forbidden %v", out, err, tc.forbidden)
			}
		})
	}

	stored := []byte(privateCRD)
	spec := `{"group":"cluster.x-k8s.io","names":{"plural":"machines","singular":"machine","shortNames":["ma"],"kind":"Machine","listKind":"MachineList","categories":["cluster-api"]},"scope":"Namespaced","versions":[{"name":"v1beta2"}]}`
	changed := `{"group":"cluster.x-k8s.io","names":{"plural":"machines","singular":"machine","kind":"Machine","listKind":"MachineList"},"scope":"Cluster","versions":[{"name":"v1beta2"}]}`
	for _, tc := range []struct {
		name, body string
		forbidden  bool
	}{
		{"the stored spec", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec + `}`, false},
		{"defaults are the apiserver's", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec[:len(spec)-1] + `,"conversion":{"strategy":"None"}}}`, false},
		{"Spec is not spec", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + changed + `,"Spec":` + spec + `}`, true},
		{"the last spec wins", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec + `,"spec":` + changed + `}`, true},
		// The first spec's conversion stays: the apiserver decodes the second spec over the first.
		{"repeated specs merge", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":{"conversion":{"strategy":"Webhook"}},"spec":` + spec + `}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.Update(name, "", stored, []byte(tc.body))
			if tc.forbidden != apierrors.IsForbidden(err) || !tc.forbidden && err != nil {
				t.Errorf("Update: %v; want forbidden %v", err, tc.forbidden)
			}
		})
	}
}
