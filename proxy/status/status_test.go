package status

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

func TestTranslate(t *testing.T) {
	in := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"machines.cluster.hypershift.openshift.io \"m1\" is invalid: spec.infrastructureRef.apiGroup: Invalid value: \"infrastructure.cluster.hypershift.openshift.io\"",` +
		`"reason":"Invalid","details":{"name":"m1","group":"cluster.hypershift.openshift.io","kind":"Machine",` +
		`"causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"infrastructure.cluster.hypershift.openshift.io\"","field":"spec.infrastructureRef.apiGroup"}]},"code":422}`
	out, err := Translate(translate.ToUpstream, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.Status
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if want := `machines.cluster.x-k8s.io "m1" is invalid: spec.infrastructureRef.apiGroup: Invalid value: "infrastructure.cluster.x-k8s.io"`; got.Message != want {
		t.Errorf("message = %q, want %q", got.Message, want)
	}
	if got.Details.Group != "cluster.x-k8s.io" {
		t.Errorf("details.group = %q", got.Details.Group)
	}
	if want := `Invalid value: "infrastructure.cluster.x-k8s.io"`; got.Details.Causes[0].Message != want {
		t.Errorf("cause message = %q, want %q", got.Details.Causes[0].Message, want)
	}
	if got.Details.Causes[0].Field != "spec.infrastructureRef.apiGroup" || got.Code != 422 || got.Reason != metav1.StatusReasonInvalid {
		t.Errorf("other fields changed: %+v", got)
	}
	// Every other byte as the backend sent it, in its order.
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"machines.cluster.x-k8s.io \"m1\" is invalid: spec.infrastructureRef.apiGroup: Invalid value: \"infrastructure.cluster.x-k8s.io\"",` +
		`"reason":"Invalid","details":{"name":"m1","group":"cluster.x-k8s.io","kind":"Machine",` +
		`"causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"infrastructure.cluster.x-k8s.io\"","field":"spec.infrastructureRef.apiGroup"}]},"code":422}`
	if string(out) != want {
		t.Errorf("\n got %s\nwant %s", out, want)
	}
}

func TestTranslateUnchanged(t *testing.T) {
	in := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" not found","code":404}`)
	out, err := Translate(translate.ToUpstream, in)
	if err != nil || string(out) != string(in) {
		t.Errorf("Translate = %s, %v; want the input unchanged", out, err)
	}
}

func TestTranslateMalformed(t *testing.T) {
	for _, in := range []string{`{"message":"cluster.hypershift.openshift.io`, `["cluster.hypershift.openshift.io"]`} {
		if _, err := Translate(translate.ToUpstream, []byte(in)); err == nil {
			t.Errorf("Translate(%s): want an error", in)
		}
	}
}

func TestWarnings(t *testing.T) {
	h := http.Header{}
	h.Add("Warning", `299 - "cluster.hypershift.openshift.io/v1beta1 MachineDeployment is deprecated; use cluster.hypershift.openshift.io/v1beta2 MachineDeployment"`)
	h.Add("Warning", `299 - "unknown field \"spec.foo\""`)
	Warnings(translate.ToUpstream, h["Warning"])
	want := []string{
		`299 - "cluster.x-k8s.io/v1beta1 MachineDeployment is deprecated; use cluster.x-k8s.io/v1beta2 MachineDeployment"`,
		`299 - "unknown field \"spec.foo\""`,
	}
	for i, w := range h.Values("Warning") {
		if w != want[i] {
			t.Errorf("Warning[%d] = %q, want %q", i, w, want[i])
		}
	}
}

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		reason metav1.StatusReason
	}{
		{apierrors.NewBadRequest("bad"), 400, metav1.StatusReasonBadRequest},
		{apierrors.NewServiceUnavailable("down"), 503, metav1.StatusReasonServiceUnavailable},
		{errors.New("boom"), 500, metav1.StatusReasonInternalError},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Length", "12")
		Write(rec, tc.err)
		if rec.Code != tc.code {
			t.Errorf("%v: code %d, want %d", tc.err, rec.Code, tc.code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%v: Content-Type %q", tc.err, ct)
		}
		var s metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatalf("%v: body %s: %v", tc.err, rec.Body, err)
		}
		if s.Kind != "Status" || s.APIVersion != "v1" || s.Reason != tc.reason || int(s.Code) != tc.code || s.Status != metav1.StatusFailure {
			t.Errorf("%v: Status %+v", tc.err, s)
		}
	}
}

// TestTranslateQuoting: a message quoting the request body as the proxy sent it quotes the client's, as
// the client sent it, and the rest of the message is translated.
func TestTranslateQuoting(t *testing.T) {
	sent := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`
	client := `{"apiVersion":"cluster.x-k8s.io/v1beta2","note":"cluster.hypershift.openshift.io"}`
	msg := "clusters.cluster.hypershift.openshift.io: Object 'Kind' is missing in '" + sent + "' (" + sent[:10] + " ...)"
	in, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Message: msg,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: sent}}}})
	out, err := TranslateQuoting(translate.ToUpstream, in, []Quote{{Sent: sent[:10] + " ...", Client: "SUMMARY"}, {Sent: sent, Client: client}})
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.Status
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if want := "clusters.cluster.x-k8s.io: Object 'Kind' is missing in '" + client + "' (SUMMARY)"; got.Message != want {
		t.Errorf("message = %q, want %q", got.Message, want)
	}
	if got.Details.Causes[0].Message != client {
		t.Errorf("cause message = %q, want %q", got.Details.Causes[0].Message, client)
	}
}

// TestTranslateQuotingGroup: a details.group the proxy sent for the client's group is the client's.
func TestTranslateQuotingGroup(t *testing.T) {
	in := []byte(`{"kind":"Status","apiVersion":"v1","details":{"name":"m","group":"cluster.hypershift.openshift.io.invalid","kind":"Machine"},"code":422}`)
	out, err := TranslateQuoting(translate.ToUpstream, in, []Quote{{Sent: "cluster.hypershift.openshift.io.invalid", Client: "cluster.hypershift.openshift.io"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"Status","apiVersion":"v1","details":{"name":"m","group":"cluster.hypershift.openshift.io","kind":"Machine"},"code":422}`; string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
