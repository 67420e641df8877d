package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/k8s"
)

func newK8sCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes manifests for a load spread over agents in a cluster",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newK8sRenderCmd(a))
	return cmd
}

func newK8sRenderCmd(a *app) *cobra.Command {
	var o k8s.Options
	var out string
	cmd := &cobra.Command{
		Use:   "render --agents N --image IMAGE [--out DIR] [-- LOAD-OLTP-FLAGS...]",
		Short: "Write the manifests of a load on N agent pods and a coordinator pod",
		Long: `k8s render writes, into --out, the manifests of a 'dbrig load oltp' run in a
Kubernetes cluster:

  config.yaml       a ConfigMap: the number of agents and the coordinator's address
  coordinator.yaml  a headless Service and a Job of one pod running
                    'dbrig load oltp --listen-agents :PORT --agent-count N ...'
  agents.yaml       an Indexed Job of N pods, each 'dbrig agent --connect
                    COORDINATOR --index $(JOB_COMPLETION_INDEX)': the index is the
                    agent's share of the users or the rate

The flags after -- are the coordinator's 'dbrig load oltp' flags (users,
duration, mix, rate ...). The server is a target whose URI the coordinator
reads from the Secret NAME-target (key uri); agents prove they belong to the
run with the Secret NAME-agent-token (key token). dbrig writes neither:

  kubectl create secret generic dbrig-target --from-literal=uri='postgres://...'
  kubectl create secret generic dbrig-agent-token --from-literal=token=$(openssl rand -hex 16)
  kubectl apply -f DIR/

The control traffic between the pods is plain TCP on the cluster's network
(the login travels on it): keep the namespace to the run, or put a network
policy around it.`,
		Example: `  dbrig k8s render --agents 8 --image registry.example/dbrig:v1 --out k8s/ -- --users 800 --duration 10m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.LoadArgs = args
			files, err := k8s.Render(o)
			if err != nil {
				return usageError(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return failure(err)
			}
			for _, f := range files {
				p := filepath.Join(out, f.Name)
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					return failure(err)
				}
				fmt.Fprintln(a.stdout, p)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Agents, "agents", 0, "load agents `N`, one pod each")
	fl.StringVar(&o.Image, "image", "", "the container `IMAGE` that holds dbrig (the same build for coordinator and agents)")
	fl.StringVar(&o.Name, "name", "dbrig", "prefix of every object's name")
	fl.StringVar(&o.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fl.IntVar(&o.Port, "port", 7070, "the coordinator's port for its agents")
	fl.StringVar(&o.AgentCPU, "agent-cpu", "1", "each agent pod's CPU request and limit")
	fl.StringVar(&o.AgentMemory, "agent-memory", "1Gi", "each agent pod's memory request and limit")
	fl.StringVar(&out, "out", "k8s", "directory to write the manifests in")
	return cmd
}
