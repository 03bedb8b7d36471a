package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
)

// unbounded is a hold on a budget with room for anything.
func unbounded() *webhookio.Hold { return webhookio.NewLimits("test", 1<<40, 1, nil).NewHold() }

// readReview reads data as the handler reads a body, through a reader that returns one byte at a time
// when slow (every value then arrives in pieces).
func readReview(data []byte, slow bool) (*conversionReview, error) {
	var r io.Reader = bytes.NewReader(data)
	if slow {
		r = iotest.OneByteReader(r)
	}
	return readConversionReview(webhookio.NewReader(r, -1, 1<<30, unbounded()))
}

// hasMember reports whether data names key (case-insensitively) anywhere: a crude test for members
// whose decoding the handler drops or follows differently (see FuzzReadConversionReview).
func hasMember(data []byte, key string) bool {
	return bytes.Contains(bytes.ToLower(data), []byte(`"`+strings.ToLower(key)+`"`))
}

// FuzzReadConversionReview: the handler reads a ConversionReview as encoding/json decodes one into
// apiextensionsv1.ConversionReview (what controller-runtime's conversion webhook does, and the
// handler did before it read reviews object by object): what json.Unmarshal accepts with a request,
// readConversionReview accepts with the same apiVersion, kind, uid, desiredAPIVersion and objects,
// byte for byte; what it accepts, json.Unmarshal does. Two differences are by design and skipped: a
// "response" member is scanned and dropped (json.Unmarshal decodes it, and may fail on it), and a
// request given "objects" twice keeps the second array whole (encoding/json decodes it into the first
// one's elements, which a null element then keeps).
func FuzzReadConversionReview(f *testing.F) {
	for _, seed := range []string{
		review(machineV1beta2),
		review(),
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":null}`,
		`{"APIVERSION":"apiextensions.k8s.io/v1","Kind":"ConversionReview","REQUEST":{"UID":"x","DesiredApiVersion":"v","Objects":[1,"s",null,{}]}}`,
		`{"apiVersion":"a","kind":null,"request":{"uid":"\u0041","objects":null,"other":[{"x":[1,2]}]}}`,
		`{"request":{"uid":"a"},"request":{"desiredAPIVersion":"b"}}`,
		`{"request":{"objects":[{"a":1}]}} x`,
		`{"request":{"objects":[{"a":1}]}}  ` + "\n",
		`{"request":{"uid":5}}`,
		`{"request":[]}`,
		`null`,
		`{"request":{"objects":[1e5,-0.5,true,false]}}`,
		`{"apiVersion":"\ud800","request":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want apiextensionsv1.ConversionReview
		jsonOK := json.Unmarshal(data, &want) == nil && want.Request != nil
		for _, slow := range []bool{false, true} {
			got, err := readReview(data, slow)
			ok := err == nil && got.request != nil
			switch {
			case jsonOK && !ok:
				t.Fatalf("json.Unmarshal reads %q, the handler fails: %v", data, err)
			case ok && !jsonOK:
				if hasMember(data, "response") {
					t.Skip("a response member: json.Unmarshal decodes it")
				}
				t.Fatalf("the handler reads %q, json.Unmarshal does not", data)
			case !ok:
				continue
			}
			if got.apiVersion != want.APIVersion || got.kind != want.Kind || got.request.uid != want.Request.UID ||
				got.request.desiredAPIVersion != want.Request.DesiredAPIVersion || len(got.request.objects) != len(want.Request.Objects) {
				t.Fatalf("%q: read %+v %+v, json.Unmarshal %+v", data, got, got.request, want)
			}
			for i, o := range got.request.objects {
				if !bytes.Equal(o, want.Request.Objects[i].Raw) {
					if o == nil && bytes.Count(bytes.ToLower(data), []byte(`objects"`)) > 1 {
						t.Skip("objects twice: encoding/json keeps the first one's element for a null")
					}
					t.Fatalf("%q: object %d read %q, json.Unmarshal %q", data, i, o, want.Request.Objects[i].Raw)
				}
			}
		}
	})
}

// TestReadBody: the errors of reading, told apart from those of the JSON.
func TestReadBody(t *testing.T) {
	for name, tc := range map[string]struct {
		body     string
		declared int64
		limit    int64
		ioErr    bool
	}{
		"over the limit":      {body: review(machineV1beta2), declared: -1, limit: 100, ioErr: true},
		"ends early":          {body: `{"request":{"objects":[{"a":`, declared: -1, limit: 1 << 20},
		"declared, then less": {body: `{"request":{}}`, declared: 100, limit: 1 << 20, ioErr: true},
		"garbage":             {body: `{"request":{]`, declared: -1, limit: 1 << 20},
	} {
		var r io.Reader = strings.NewReader(tc.body)
		if tc.declared >= 0 {
			// As Go's server reads a body of declared length that the connection ends early.
			r = io.MultiReader(r, iotest.ErrReader(io.ErrUnexpectedEOF))
		}
		_, err := readConversionReview(webhookio.NewReader(r, tc.declared, tc.limit, unbounded()))
		var readErr *webhookio.ReadError
		if err == nil || errors.As(err, &readErr) != tc.ioErr {
			t.Errorf("%s: %v, want an error of reading: %v", name, err, tc.ioErr)
		}
	}
}
