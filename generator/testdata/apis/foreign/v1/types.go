// Package v1 is another API whose type a fixture kind embeds whole.
package v1

// Template is a template of another API's object: its apiVersion names that API's own kinds.
type Template struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Replicas   int32  `json:"replicas,omitempty"`
}
