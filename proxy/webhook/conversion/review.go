package conversion

import (
	"bytes"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
)

// conversionReview is what the handler reads of a ConversionReview (apiextensions.k8s.io/v1): its
// apiVersion and kind, and of its request the uid, the desired apiVersion and each object, the bytes of
// one JSON value each (nil for a null, as a runtime.RawExtension decodes it). Other members are
// scanned and dropped.
type conversionReview struct {
	apiVersion, kind string
	request          *conversionRequest
}

type conversionRequest struct {
	uid               types.UID
	desiredAPIVersion string
	objects           [][]byte
}

// readConversionReview reads a ConversionReview from s, as encoding/json decodes one into
// apiextensionsv1.ConversionReview (keys matched case-insensitively, nulls leaving a string as it is and
// a request or its objects absent, a member given twice read twice), and trailing data is an error, as
// json.Unmarshal says; a response member is scanned and dropped. Each object is
// copied out of s's buffer into a slice of its own, charged to the hold: the objects of a review are
// what it holds once read, about its size.
func readConversionReview(s *webhookio.Reader) (*conversionReview, error) {
	rv := &conversionReview{}
	err := s.Object(func(key string) error {
		switch {
		case strings.EqualFold(key, "apiVersion"):
			return s.Str("apiVersion", &rv.apiVersion)
		case strings.EqualFold(key, "kind"):
			return s.Str("kind", &rv.kind)
		case strings.EqualFold(key, "request"):
			if null, err := s.Null(); err != nil || null {
				rv.request = nil
				return err
			}
			// A request given twice is read into the first, as encoding/json decodes into what a pointer
			// points to.
			if rv.request == nil {
				rv.request = &conversionRequest{}
			}
			req := rv.request
			return s.Object(func(key string) error {
				switch {
				case strings.EqualFold(key, "uid"):
					return s.Str("request.uid", (*string)(&req.uid))
				case strings.EqualFold(key, "desiredAPIVersion"):
					return s.Str("request.desiredAPIVersion", &req.desiredAPIVersion)
				case strings.EqualFold(key, "objects"):
					req.objects = nil
					return readObjects(s, &req.objects)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, err
	}
	return rv, nil
}

// readObjects reads a JSON array of values (or null) and appends a copy of each to dst (Reader.Keep).
func readObjects(s *webhookio.Reader, dst *[][]byte) error {
	if null, err := s.Null(); err != nil || null {
		return err
	}
	return s.Array("request.objects", func() error {
		v, err := s.Value()
		if err != nil {
			return err
		}
		var obj []byte
		if !bytes.Equal(v, []byte("null")) {
			if obj, err = s.Keep(v); err != nil {
				return err
			}
		}
		*dst = append(*dst, obj)
		return nil
	})
}
