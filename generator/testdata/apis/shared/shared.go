// Package shared holds types that fixture API packages use but that are not mirrored.
package shared

// UInt16 is a named pointer of another package (as CAPO's optional.UInt16): mirrored fields keep it by
// name.
// +kubebuilder:validation:Minimum=1
type UInt16 *uint16

// Blob encodes itself, so the generator cannot see whether it hides a group.
type Blob struct {
	data []byte
}

// MarshalJSON encodes the blob as it is.
func (b Blob) MarshalJSON() ([]byte, error) { return b.data, nil }
