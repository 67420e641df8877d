// Package k8s writes the Kubernetes manifests of a distributed load: the
// load agents as an Indexed Job (one pod per agent, JOB_COMPLETION_INDEX as
// the agent's share), the coordinator as a Job of one pod behind a headless
// service that the agents dial, and a ConfigMap with the run's
// configuration. dbrig keeps no scheduler of its own: Kubernetes places the
// pods, and dbrig's agents and coordinator speak over the service.
package k8s

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"sigs.k8s.io/yaml"
)

// Options describe a run.
type Options struct {
	Name      string // prefix of every object (default "dbrig")
	Namespace string // "" = the kubectl context's
	Image     string // dbrig's container image
	Agents    int    // load agents, one pod each
	Port      int    // the coordinator's port for agents (default 7070)
	// AgentCPU and AgentMemory are each agent pod's requests and limits
	// ("1", "1Gi").
	AgentCPU, AgentMemory string
	// LoadArgs are the coordinator's `dbrig load oltp` arguments (users,
	// duration, mix ...); the target comes from the Secret TargetSecret
	// (key "uri"), the agents' token from TokenSecret (key "token").
	LoadArgs     []string
	TargetSecret string
	TokenSecret  string
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = "dbrig"
	}
	if o.Port == 0 {
		o.Port = 7070
	}
	if o.AgentCPU == "" {
		o.AgentCPU = "1"
	}
	if o.AgentMemory == "" {
		o.AgentMemory = "1Gi"
	}
	if o.TargetSecret == "" {
		o.TargetSecret = o.Name + "-target"
	}
	if o.TokenSecret == "" {
		o.TokenSecret = o.Name + "-agent-token"
	}
	var errs []error
	if !nameRE.MatchString(o.Name) || len(o.Name) > 40 {
		errs = append(errs, fmt.Errorf("--name %q: want lowercase letters, digits and '-', at most 40", o.Name))
	}
	if o.Agents < 1 || o.Agents > 10000 {
		errs = append(errs, fmt.Errorf("--agents %d: want 1 to 10000", o.Agents))
	}
	if o.Image == "" {
		errs = append(errs, errors.New("--image: the container image that holds dbrig"))
	}
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: want 1 to 65535", o.Port))
	}
	return errors.Join(errs...)
}

// File is one manifest.
type File struct {
	Name string
	Data []byte
}

type obj = map[string]any

func meta(o Options, name, component string) obj {
	m := obj{"name": name, "labels": obj{"app.kubernetes.io/name": "dbrig", "app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": component}}
	if o.Namespace != "" {
		m["namespace"] = o.Namespace
	}
	return m
}

func selector(o Options, component string) obj {
	return obj{"app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": component}
}

// Render returns the manifests: config.yaml, coordinator.yaml (its Service
// and Job) and agents.yaml (the Indexed Job).
func Render(o Options) ([]File, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	svc := o.Name + "-coordinator"
	cfgName := o.Name + "-config"
	addr := fmt.Sprintf("%s:%d", svc, o.Port)
	config := obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(o, cfgName, "config"),
		"data": obj{"DBRIG_AGENTS": strconv.Itoa(o.Agents), "DBRIG_COORDINATOR": addr}}

	service := obj{"apiVersion": "v1", "kind": "Service", "metadata": meta(o, svc, "coordinator"),
		"spec": obj{"clusterIP": "None", "selector": selector(o, "coordinator"),
			"ports":                    []obj{{"name": "agents", "port": o.Port, "targetPort": o.Port, "protocol": "TCP"}},
			"publishNotReadyAddresses": true}}
	token := obj{"name": "DBRIG_AGENT_TOKEN", "valueFrom": obj{"secretKeyRef": obj{"name": o.TokenSecret, "key": "token"}}}
	coordArgs := append([]string{"load", "oltp", "--listen-agents", fmt.Sprintf(":%d", o.Port), "--agent-count", strconv.Itoa(o.Agents),
		"--target", "env:DBRIG_TARGET", "--out", "/runs/run"}, o.LoadArgs...)
	coordinator := obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(o, svc, "coordinator"),
		"spec": obj{"backoffLimit": 0, "template": obj{
			"metadata": obj{"labels": selector(o, "coordinator")},
			"spec": obj{"restartPolicy": "Never", "containers": []obj{{
				"name": "coordinator", "image": o.Image, "command": []string{"dbrig"}, "args": coordArgs,
				"ports":        []obj{{"name": "agents", "containerPort": o.Port, "protocol": "TCP"}},
				"env":          []obj{token, {"name": "DBRIG_TARGET", "valueFrom": obj{"secretKeyRef": obj{"name": o.TargetSecret, "key": "uri"}}}},
				"volumeMounts": []obj{{"name": "runs", "mountPath": "/runs"}},
			}}, "volumes": []obj{{"name": "runs", "emptyDir": obj{}}}}}}}

	res := obj{"cpu": o.AgentCPU, "memory": o.AgentMemory}
	agents := obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(o, o.Name+"-agents", "agent"),
		"spec": obj{"completionMode": "Indexed", "completions": o.Agents, "parallelism": o.Agents, "backoffLimit": 0,
			"template": obj{"metadata": obj{"labels": selector(o, "agent")},
				"spec": obj{"restartPolicy": "Never", "containers": []obj{{
					"name": "agent", "image": o.Image, "command": []string{"dbrig"},
					// Kubernetes expands $(VAR) from the container's env:
					// the Job's controller sets JOB_COMPLETION_INDEX.
					"args":      []string{"agent", "--connect", "$(DBRIG_COORDINATOR)", "--index", "$(JOB_COMPLETION_INDEX)"},
					"envFrom":   []obj{{"configMapRef": obj{"name": cfgName}}},
					"env":       []obj{token},
					"resources": obj{"requests": res, "limits": res},
				}}}}}}

	var files []File
	for _, f := range []struct {
		name string
		docs []obj
	}{{"config.yaml", []obj{config}}, {"coordinator.yaml", []obj{service, coordinator}}, {"agents.yaml", []obj{agents}}} {
		var data []byte
		for i, d := range f.docs {
			b, err := yaml.Marshal(d)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			if i > 0 {
				data = append(data, "---\n"...)
			}
			data = append(data, b...)
		}
		files = append(files, File{Name: f.name, Data: data})
	}
	return files, nil
}
