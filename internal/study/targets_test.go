package study

import (
	"maps"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// TestTargetWithoutAName: a --target without NAME= stands for the study's
// only instance; given beside that instance's own, or for a study of
// several, it is refused, naming what the study has.
func TestTargetWithoutAName(t *testing.T) {
	t.Parallel()
	one := &Spec{Name: "one", Instances: []InstanceSpec{{Name: "db"}}}
	two := &Spec{Name: "two", Instances: []InstanceSpec{{Name: "pub"}, {Name: "sub"}}}
	login := engine.Conn{}
	unnamed := map[string]string{UnnamedTarget: "postgres"}
	logins, engines, err := nameTargets(one, map[string]engine.Conn{UnnamedTarget: login}, unnamed)
	if err != nil || !maps.Equal(engines, map[string]string{"db": "postgres"}) || len(logins) != 1 {
		t.Errorf("nameTargets(one instance) = %v, %v, %v; want db", logins, engines, err)
	}
	if _, ok := unnamed["db"]; ok {
		t.Error("nameTargets changed the caller's map")
	}
	for _, tt := range []struct {
		spec    *Spec
		engines map[string]string
		want    string
	}{
		{two, unnamed, "--target without a name: study two has 2 instances (pub, sub)"},
		{one, map[string]string{UnnamedTarget: "postgres", "db": "postgres"}, "--target db is given twice"},
	} {
		if _, _, err := nameTargets(tt.spec, nil, tt.engines); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("nameTargets(%s, %v) = %v, want %q", tt.spec.Name, tt.engines, err, tt.want)
		}
	}
}
