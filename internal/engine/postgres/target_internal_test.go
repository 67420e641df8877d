package postgres

import (
	"strings"
	"testing"
)

func TestCheckTargetVersion(t *testing.T) {
	tests := []struct {
		version, num string
		want         string // "" = accepted
	}{
		{"15.18 (Debian 15.18-0+deb12u1)", "150018", ""},
		{"13.0", "130000", ""},
		{"17beta1", "170000", ""},
		{"12.22", "120022", "it runs PostgreSQL 12.22, and dbrig needs 13 or later on a target"},
		{"9.6.24", "90624", "it runs PostgreSQL 9.6.24"},
		{"?", "", "cannot read its version number"},
	}
	for _, tt := range tests {
		err := checkTargetVersion(tt.version, tt.num)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("checkTargetVersion(%q, %q) = %v, want accepted", tt.version, tt.num, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("checkTargetVersion(%q, %q) = %v, want %q", tt.version, tt.num, err, tt.want)
		}
	}
}
