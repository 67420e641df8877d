package oltp

import (
	"encoding/json"
	"fmt"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/load"
)

// AgentParams are what a load agent needs to run its share of the shop's
// load: the mix and the data's scale factor (the users, rate and seed are
// the share's, in its load configuration).
type AgentParams struct {
	Mix   string  `json:"mix"`
	Scale float64 `json:"scale_factor"`
}

// AgentWorkload makes one agent's share of the shop's load: the same
// transactions as in dbrig's own process, each user with its own
// connection to the login's server, its random choices seeded with the
// agent's own seed.
func AgentWorkload(params json.RawMessage, login engine.Conn, seed uint64) (load.Workload, error) {
	var p AgentParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("oltp: the agent's parameters: %w", err)
	}
	mix, err := ParseMix(p.Mix)
	if err != nil {
		return nil, err
	}
	if !(p.Scale > 0) || p.Scale > MaxScale {
		return nil, fmt.Errorf("oltp: scale factor %v out of range", p.Scale)
	}
	return &loadWorkload{mix: mix, sizes: SizesAt(p.Scale), login: login, seed: seed}, nil
}
