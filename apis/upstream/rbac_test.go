package upstream

import (
	"strings"
	"testing"
)

func TestRolesAreUnique(t *testing.T) {
	names, files := map[string]bool{}, map[string]bool{}
	for _, r := range Roles {
		if names[r.Name] || files[r.Module+"/"+r.File] {
			t.Errorf("role %s (%s %s) is listed twice", r.Name, r.Module, r.File)
		}
		if r.Name == "" || strings.ToLower(r.Name) != r.Name || len(PrivateRolePrefix+r.Name) > 253 {
			t.Errorf("role %q: the name must be a lower-case DNS subdomain", r.Name)
		}
		names[r.Name], files[r.Module+"/"+r.File] = true, true
	}
}
