package tpch

import (
	"context"
	"encoding/json"
	"fmt"
)

// planNode is the part of PostgreSQL's EXPLAIN (FORMAT JSON) the serial
// fraction is read from.
type planNode struct {
	Type           string     `json:"Node Type"`
	TotalCost      float64    `json:"Total Cost"`
	WorkersPlanned int        `json:"Workers Planned"`
	Plans          []planNode `json:"Plans"`
}

// PlanShape is what a query's plan at a degree says of its parallelism
// before it runs: the most workers a Gather asks for, and the share of
// the plan's cost, counted as one process would spend it, that stays
// outside every Gather's parallel part (Amdahl's serial fraction as the
// planner sees it).
type PlanShape struct {
	Workers        int
	SerialFraction float64
}

// ParsePlanShape reads a plan's shape from EXPLAIN (FORMAT JSON). Below a
// Gather each participant's cost is its share: the planner divided the
// rows by the parallel divisor (the workers and the leader's part), so the
// part's cost on one process is the child's cost times that divisor.
func ParsePlanShape(explain []byte) (PlanShape, error) {
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(explain, &doc); err != nil {
		return PlanShape{}, fmt.Errorf("read EXPLAIN (FORMAT JSON): %w", err)
	}
	if len(doc) != 1 || doc[0].Plan.TotalCost <= 0 {
		return PlanShape{}, fmt.Errorf("read EXPLAIN (FORMAT JSON): no plan with a cost")
	}
	root := doc[0].Plan
	var shape PlanShape
	var parallelShare, parallelSerial float64 // the gathered parts' cost per participant and on one process
	var walk func(n planNode)
	walk = func(n planNode) {
		if (n.Type == "Gather" || n.Type == "Gather Merge") && len(n.Plans) > 0 {
			shape.Workers = max(shape.Workers, n.WorkersPlanned)
			child := n.Plans[0].TotalCost
			parallelShare += child
			parallelSerial += child * parallelDivisor(n.WorkersPlanned)
			return // a Gather's part runs in its workers; none nests inside
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root)
	serialCost := root.TotalCost - parallelShare + parallelSerial
	shape.SerialFraction = min(max((serialCost-parallelSerial)/serialCost, 0), 1)
	return shape, nil
}

// parallelDivisor is PostgreSQL's share of a parallel part's rows each
// participant is costed for (costsize.c, get_parallel_divisor): the workers
// and what the leader still does beside them, 1 − 0.3 a worker, with the
// leader participating (the default).
func parallelDivisor(workers int) float64 {
	return float64(workers) + max(1-0.3*float64(workers), 0)
}

// planShape explains a query at the session's degree.
func (s *session) planShape(ctx context.Context, sql string) (PlanShape, error) {
	plan, err := s.values(ctx, "EXPLAIN (FORMAT JSON) "+sql)
	if err != nil {
		return PlanShape{}, err
	}
	if len(plan) != 1 || len(plan[0]) != 1 {
		return PlanShape{}, fmt.Errorf("EXPLAIN (FORMAT JSON) returned %d rows", len(plan))
	}
	return ParsePlanShape([]byte(plan[0][0]))
}
