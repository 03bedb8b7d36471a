package openapi

import (
	"fmt"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// Media types of OpenAPI documents, as kube-apiserver names them (k8s.io/kube-openapi handler and
// handler3): a client may ask for the "@" forms, the answer carries the "." forms.
const (
	JSON              = "application/json"
	V2Protobuf        = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	V2ProtobufRequest = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	V3Protobuf        = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	V3ProtobufRequest = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// Document is one translated document in the forms clients ask for.
type Document struct {
	// BackendETag is the backend's ETag of the untranslated document (without quotes).
	BackendETag string
	// JSON is the translated document; LastModified when it was translated.
	JSON         []byte
	LastModified time.Time

	v3      bool
	mu      sync.Mutex
	derived map[string]derivedForm
}

type derivedForm struct {
	data []byte
	err  error
}

// Derived returns a form of the document derived from it (protobuf, a compressed form, ...), made by
// make once and kept under key for the document's life.
func (d *Document) Derived(key string, make func() ([]byte, error)) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.derived[key]; ok {
		return f.data, f.err
	}
	data, err := make()
	if d.derived == nil {
		d.derived = map[string]derivedForm{}
	}
	d.derived[key] = derivedForm{data, err}
	return data, err
}

// Protobuf returns the document in the protobuf form kube-apiserver serves (gnostic's openapi_v2 or
// openapi_v3 Document), transcoded from JSON once: a large v2 document takes a good part of a second.
func (d *Document) Protobuf() ([]byte, error) {
	return d.Derived("protobuf", func() ([]byte, error) {
		var msg proto.Message
		var err error
		if d.v3 {
			msg, err = openapiv3.ParseDocument(d.JSON)
		} else {
			msg, err = openapiv2.ParseDocument(d.JSON)
		}
		if err != nil {
			return nil, fmt.Errorf("transcoding the OpenAPI document to protobuf: %w", err)
		}
		return proto.Marshal(msg)
	})
}

// Cache holds the last translation of each document by its backend path, so that a document is
// translated (and transcoded) once per backend version: the proxy still asks the backend every time,
// with If-None-Match, so that the backend authorizes every client. It is safe for concurrent use and
// holds one document per path (/openapi/v2 and the v3 documents of the routed group versions).
type Cache struct {
	mu   sync.Mutex
	docs map[string]*Document
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{docs: map[string]*Document{}} }

// Get returns the cached document of a backend path, or nil.
func (c *Cache) Get(path string) *Document {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.docs[path]
}

// Put stores the translation json of the backend document at path whose ETag is backendETag, and
// returns it. v3 says which protobuf form it has.
func (c *Cache) Put(path, backendETag string, json []byte, v3 bool) *Document {
	d := &Document{BackendETag: backendETag, JSON: json, LastModified: time.Now(), v3: v3}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs[path] = d
	return d
}
