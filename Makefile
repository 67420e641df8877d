# dbrig: a test rig for database performance.
# `make help` lists the targets.

GO        ?= go
BIN       ?= ./dbrig
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# The whole suite stays well under CI's 15-minute budget on 2 cores.
TEST_TIMEOUT ?= 25m
# The packages make test runs (make test TEST_PKGS=./internal/link/ for one).
TEST_PKGS ?= ./...
# go test starts packages in the order it is given them, two at a time on 2
# cores, so ./... runs the packages whose tests take longest first and the
# short ones fill both cores at the end: in import path order the script
# workload and the geo-replication study began 835 and 950 s into a 1041 s
# run (load 8 to 10) and ended it, the other core's packages long done; in
# this order the suite took 1005 s at load 9 to 15, ending on short packages.
TEST_FIRST = ./cmd/dbrig/ ./internal/replication/ ./internal/workload/script/ \
	./internal/load/ ./internal/engine/mariadb/ ./internal/study/ \
	./internal/workload/georep/ ./internal/engine/postgres/ ./studies/georeplication/
test_pkgs = $(if $(filter ./...,$(TEST_PKGS)),$(TEST_FIRST) )$(TEST_PKGS)
# Three test binaries at once on 2 cores, not go test's default of one per
# core: many packages wait long with little CPU (a link's delays, a replica
# catching up, pgbench's prediction points through 1 to 20 ms), and with two
# at a time such a wait left a core idle. make test took 8 min 29 s with
# three at a time against 9 min 31 s with two (both passing, nothing else
# running, load average up to 7 from the suite itself, 2026-11-27).
TEST_PARALLEL ?= 3
# How long make test fuzzes FuzzNoPasswordInOutput (cmd/dbrig), beside the
# tests: random connection strings with a planted password, through every command
# that takes a server, checked for the password in stdout, stderr, --json and
# --out. Its seed corpus runs with the other tests; FUZZ_TIME=0 skips the
# fuzzing. It runs while the tests run, with FUZZ_WORKERS workers, where it ran
# after them with one per core: after them its 30 s were the suite's last half
# minute with nothing else to do, and on 2 cores the tests keep both busy, so a
# second worker took its CPU from them.
FUZZ_TIME ?= 30s
FUZZ_WORKERS ?= 1
# Where make test makes its TMPDIR, its template cache and the fuzz step's
# directory: /dev/shm when it is a tmpfs, else $TMPDIR or /tmp. The tests'
# servers make and remove thousands of data-directory files, and on this
# machine's ext4 (no journal) each new inode is searched for past the ones
# deleted in the last minute (perf: ext4's recently_deleted under ext4_create):
# go test -race of internal/engine/postgres, internal/workload/dbconn and
# internal/workload/oltp took 21.0 + 33.0 and 20.4 + 32.5 s of CPU (user +
# sys) with TMPDIR under /tmp against 17.9 + 12.7 and 19.2 + 13.6 s under
# /dev/shm (alternating, load 11 to 16, 2026-11-28). The servers are the same
# real ones; their files live in memory, which loop devices (read-ahead's
# emulated disks) reach without direct I/O, and no test's figure depends on it.
TEST_TMPBASE ?= $(shell [ -w /dev/shm ] && [ "$$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && echo /dev/shm || echo "$${TMPDIR:-/tmp}")

.PHONY: help demo build test vet bench bench-link bench-rbar bench-oltp bench-script bench-replication accept-predict screenshots clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build ./dbrig
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dbrig

demo: ## install what is missing, build, run the quick row-by-row study, print the report's path
	scripts/install-deps
	$(MAKE) --no-print-directory build
	$(BIN) run rbar-latency --quick

# The tests run with TMPDIR set to a fresh directory, which must be empty when
# they end: a test keeps its files in t.TempDir() or removes them, as dbrig
# removes what it creates. Anything left there, or any file the tests add to
# the source tree (a run directory written beside a package, say), is listed
# and fails the target; the directory is removed either way. It is sticky and
# world-writable like /tmp, since the test servers run as an unprivileged
# account. When the packages include cmd/dbrig, FuzzNoPasswordInOutput is
# fuzzed for FUZZ_TIME meanwhile, in a directory of its own, removed after it: the fuzzer
# ends by killing its workers mid-input, whose t.TempDir() then stays (the seed
# corpus runs in the first step, under the leftover check). Its build
# instruments every package, a few minutes once on a cold build cache; a
# failing input lands in cmd/dbrig/testdata/fuzz, which the tree check lists.
# Every package runs under -race: it costs too little of the suite's CPU to
# trade away (user+sys of each test binary and its servers, with and without
# it, one run each at load 6 to 10: cmd/dbrig 404 s against 367, as its
# end-to-end tests run a dbrig built without it; replication 161 against 178,
# within the spread; script 79 / 71, study 47 / 41, georep 47 / 30), and
# where it costs most, internal/load (36 s against 17), its virtual users are
# the concurrent code it is there to check. The test binaries are linked
# without DWARF (-ldflags=-w), which no test reads: a race report and a
# panic's stack still name every function, file and line (from the binary's
# own tables), and linking the 49 test binaries took 41 s of CPU against 71
# with it (go test -race -run '^$' ./..., one run each, load 20 to 36).
# Every process of the run shares one data-directory template cache
# (DBRIG_CACHE_DIR, docs/engines.md), a fresh 0700 directory beside TMPDIR,
# removed at the end: a package's first server copies the template another
# package's initdb or mariadb-install-db made, and the run leaves no
# template behind nor takes one from an earlier run.
test: ## install what the tests need, vet, run every test, and fail if a test left files in TMPDIR or the tree
	scripts/install-deps --test
	$(GO) vet ./...
	@tmp=$$(mktemp -d "$(TEST_TMPBASE)/dbrig-make-test.XXXXXX") && chmod 1777 "$$tmp" || exit 1; \
	cache=$$(mktemp -d "$(TEST_TMPBASE)/dbrig-make-cache.XXXXXX") || { rm -rf "$$tmp"; exit 1; }; \
	untracked=$$(mktemp); git status --porcelain --untracked-files=all 2>/dev/null | sort > "$$untracked"; \
	echo "TMPDIR=$$tmp DBRIG_CACHE_DIR=$$cache CI=$${CI:-} $(GO) test -race -ldflags=-w -timeout $(TEST_TIMEOUT) -count=1 -p $(TEST_PARALLEL) $(test_pkgs)"; \
	status=0; fuzz=; \
	case "$(FUZZ_TIME) $(TEST_PKGS)" in 0\ *|0s\ *) ;; *./...*|*cmd/dbrig*) \
		fuzz=$$(mktemp -d "$(TEST_TMPBASE)/dbrig-make-fuzz.XXXXXX") && chmod 1777 "$$fuzz" || exit 1; \
		fuzzout=$$(mktemp) || exit 1; \
		echo "TMPDIR=$$fuzz $(GO) test -run '^\$$' -fuzz '^FuzzNoPasswordInOutput\$$' -fuzztime $(FUZZ_TIME) -parallel $(FUZZ_WORKERS) ./cmd/dbrig/ (beside the tests; its output follows theirs)"; \
		{ TMPDIR="$$fuzz" DBRIG_CACHE_DIR="$$cache" $(GO) test -run '^$$' -fuzz '^FuzzNoPasswordInOutput$$' -fuzztime $(FUZZ_TIME) -parallel $(FUZZ_WORKERS) ./cmd/dbrig/ > "$$fuzzout" 2>&1; echo $$? >> "$$fuzzout.status"; } & \
		fuzzpid=$$!;; \
	esac; \
	TMPDIR="$$tmp" DBRIG_CACHE_DIR="$$cache" CI=$${CI:-} $(GO) test -race -ldflags=-w -timeout $(TEST_TIMEOUT) -count=1 -p $(TEST_PARALLEL) $(test_pkgs) || status=$$?; \
	if [ -n "$$fuzz" ]; then \
		wait $$fuzzpid; cat "$$fuzzout"; fuzzstatus=$$(cat "$$fuzzout.status" 2>/dev/null || echo 1); \
		[ "$$fuzzstatus" = 0 ] || [ $$status -ne 0 ] || status=$$fuzzstatus; \
		rm -rf "$$fuzz" "$$fuzzout" "$$fuzzout.status"; \
	fi; \
	if [ -n "$$(ls -A "$$tmp")" ]; then \
		echo "make test: the tests left these in their TMPDIR, $$tmp:"; ls -lA "$$tmp"; \
		[ $$status -ne 0 ] || status=1; \
	fi; \
	added=$$(git status --porcelain --untracked-files=all 2>/dev/null | sort | comm -13 "$$untracked" -); \
	if [ -n "$$added" ]; then \
		echo "make test: the tests added these to the source tree:"; echo "$$added"; \
		[ $$status -ne 0 ] || status=1; \
	fi; \
	rm -rf "$$tmp" "$$cache" "$$untracked"; exit $$status

# Each bench-* target passes its benchmark's output through scripts/goal-table,
# which ends it with the table of the goals it printed (GOAL lines, each
# figure beside its peer's measured in the same run), and exits with the
# benchmark's status. make bench runs every one with GOALS naming a file they
# append their output to instead of each ending with its own table, and ends
# with one table of every goal, between the load averages before and after.
# A failing benchmark does not stop the others; make bench then fails.
GOALS ?=
bench_goals = @st=$$(mktemp) || exit 1; \
	{ $(1); echo $$? > "$$st"; } | scripts/goal-table $(if $(GOALS),--append "$(GOALS)"); \
	status=$$(cat "$$st"); rm -f "$$st"; exit $$status

bench: ## every speed benchmark (16 minutes on a quiet machine), ending with one table of every goal: each figure, its peer's in the same run, the ratio, the goal and the verdict
	@goals=$$(mktemp) || exit 1; trap 'rm -f "$$goals"' EXIT; status=0; \
	echo "load average: $$(cat /proc/loadavg)"; \
	for t in bench-link bench-rbar bench-oltp bench-script bench-replication; do \
		$(MAKE) --no-print-directory $$t GOALS="$$goals" || status=$$?; \
	done; \
	echo; echo "load average: $$(cat /proc/loadavg)"; echo; \
	scripts/goal-table --table-only < "$$goals"; exit $$status

bench-link: ## the link against direct loopback in one run (throughput and added round trip unimpaired, delivered rate from 1 Gbit/s to unlimited), ending with a table of its goals
	$(call bench_goals,$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./internal/link/)

bench-rbar: ## the row-by-row client's round trips per second against pgbench (PostgreSQL) and sysbench oltp_point_select (MariaDB), ending with a table of its goals
	$(call bench_goals,$(GO) test -run '^$$' -bench . -benchtime 5s ./internal/workload/rbar/)

bench-oltp: ## dbrig's point-select against pgbench -S -M prepared and sysbench oltp_point_select at 1, 2, 4, 8 clients on one socket; open loop against pgbench -R, also with the server stalled (about 9 minutes), ending with a table of its goals
	$(call bench_goals,$(GO) test -run '^$$' -bench 'PointSelectVs|StalledServer' -benchtime 1x -timeout 30m ./internal/workload/oltp/)

bench-script: ## pgbench's select-only and tpcb-like under dbrig's script runner against pgbench -M prepared at 1, 2, 4, 8 clients on one socket (about 5 minutes), ending with a table of its goals
	$(call bench_goals,$(GO) test -run '^$$' -bench ScriptVsPgbench -benchtime 1x -timeout 30m ./internal/workload/script/)

bench-replication: ## the replication agent as a user meets it (fsync on, cold, last row visible) against native logical replication and across 77 ms, the seed's agents against their models, then initial sync and backlog against native through the same WANs (about 6 minutes on a quiet machine), ending with a table of its goals
	$(call bench_goals,$(GO) test -run '^$$' -bench 'FasterThanNative|SeedModels|WANAgainstNative' -benchtime 1x -timeout 60m -v ./internal/workload/georep/)

accept-predict: ## pgbench's tpcb-like (-M prepared) predicted before it runs at RTT 1, 5 and 20 ms with 1 and 4 users, each held to 5 % of the measured tps; prints the table (about 1.5 minutes; a quiet machine, else it says which points it cannot judge and skips them)
	scripts/install-deps --test
	DBRIG_PREDICT_ACCEPT=1 $(GO) test -count=1 -v -run 'TestPredictionOfTPCBLike$$' ./internal/workload/script/

# The docs' pictures of reports: smoke runs of transport-oltp (the shop under
# virtual users) and page-compression, and a comparison of two key-lookup
# runs, each page as Chromium draws it in a 1280 px window, cropped to 1800 px
# (from the charts down, or the comparison's top). The runs go to a
# directory removed after.
screenshots: build ## the reports' pictures in docs/img (smoke oltp and page-compression runs and a comparison; needs Chromium; 3 to 7 minutes)
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/dbrig-screenshots.XXXXXX") || exit 1; trap 'rm -rf "$$tmp"' EXIT; set -e; \
	$(BIN) run transport-oltp --scale smoke --out "$$tmp/oltp"; \
	$(BIN) run page-compression --scale smoke --out "$$tmp/page-compression"; \
	$(BIN) run key-lookup --scale smoke --out "$$tmp/a"; \
	$(BIN) run key-lookup --scale smoke --out "$$tmp/b"; \
	$(BIN) compare "$$tmp/a" "$$tmp/b" --html "$$tmp/compare.html"; \
	mkdir -p docs/img; \
	$(GO) run ./internal/report/reporttest/screenshot -height 1800 \
		"$$tmp/oltp/report.html#charts" docs/img/report-oltp.png \
		"$$tmp/compare.html" docs/img/report-compare.png \
		"$$tmp/page-compression/report.html#charts" docs/img/report-page-compression.png

clean: ## remove the binary and runs/
	rm -rf $(BIN) runs/
