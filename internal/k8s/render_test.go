package k8s

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// decode reads one manifest strictly into a Kubernetes API type: a field
// the type does not have is an error.
func decode(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

func TestRenderDecodesAsKubernetesObjects(t *testing.T) {
	files, err := Render(Options{Name: "shop", Namespace: "perf", Image: "registry.example/dbrig:v1", Agents: 4,
		AgentCPU: "2", LoadArgs: []string{"--users", "400", "--duration", "10m"}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	for _, f := range files {
		byName[f.Name] = f.Data
	}

	var cm corev1.ConfigMap
	decode(t, byName["config.yaml"], &cm)
	if cm.Kind != "ConfigMap" || cm.Name != "shop-config" || cm.Namespace != "perf" ||
		cm.Data["DBRIG_AGENTS"] != "4" || cm.Data["DBRIG_COORDINATOR"] != "shop-coordinator:7070" {
		t.Errorf("config map %+v", cm)
	}

	docs := bytes.Split(byName["coordinator.yaml"], []byte("---\n"))
	if len(docs) != 2 {
		t.Fatalf("coordinator.yaml has %d documents", len(docs))
	}
	var svc corev1.Service
	decode(t, docs[0], &svc)
	if svc.Kind != "Service" || svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 7070 ||
		svc.Spec.Selector["app.kubernetes.io/component"] != "coordinator" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %+v", svc.Spec)
	}
	var coord batchv1.Job
	decode(t, docs[1], &coord)
	c := coord.Spec.Template.Spec.Containers[0]
	if coord.Kind != "Job" || coord.Spec.Template.Labels["app.kubernetes.io/component"] != "coordinator" ||
		coord.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || c.Image != "registry.example/dbrig:v1" {
		t.Errorf("coordinator job %+v", coord.Spec)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"load oltp --listen-agents :7070 --agent-count 4", "--target env:DBRIG_TARGET", "--users 400 --duration 10m"} {
		if !strings.Contains(args, want) {
			t.Errorf("coordinator args %q lack %q", args, want)
		}
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "DBRIG_TARGET" }); i < 0 ||
		c.Env[i].ValueFrom.SecretKeyRef.Name != "shop-target" || c.Env[i].Value != "" {
		t.Errorf("the target is not read from its secret: %+v", c.Env)
	}

	var job batchv1.Job
	decode(t, byName["agents.yaml"], &job)
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 {
		t.Fatalf("agents job: mode %v, completions %v, parallelism %v", s.CompletionMode, s.Completions, s.Parallelism)
	}
	a := s.Template.Spec.Containers[0]
	if got := strings.Join(a.Args, " "); got != "agent --connect $(DBRIG_COORDINATOR) --index $(JOB_COMPLETION_INDEX)" {
		t.Errorf("agent args %q", got)
	}
	if len(a.EnvFrom) != 1 || a.EnvFrom[0].ConfigMapRef.Name != "shop-config" {
		t.Errorf("agent env from %+v", a.EnvFrom)
	}
	if a.Env[0].Name != "DBRIG_AGENT_TOKEN" || a.Env[0].ValueFrom.SecretKeyRef.Name != "shop-agent-token" {
		t.Errorf("agent env %+v", a.Env)
	}
	if cpu := a.Resources.Limits[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("agent cpu limit %v", cpu.String())
	}
}

func TestRenderRefusesBadOptions(t *testing.T) {
	_, err := Render(Options{Name: "Bad_Name", Agents: 0})
	for _, want := range []string{"--name", "--agents 0", "--image"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
