package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// LaunchCheckID is the ID of the result RunChecks reports when the adapter
// does not start; every check is then skipped.
const LaunchCheckID = "adapter-launch"

// ErrAdapterExited is reported when the adapter process dies during a check.
var ErrAdapterExited = errors.New("the adapter process exited")

// Reporter is told about each check as the run goes, so a command line can
// print results as they come.
type Reporter interface {
	CheckStarted(check Check)
	CheckFinished(result Result)
}

// Suite is one run: the Config, the adapter process and the pods the
// checks share. RunChecks drives one; package conformancetest drives one
// from a Go test, one subtest per check.
type Suite struct {
	cfg     Config
	runID   string
	adapter *host.Client
	shared  *sharedPods
	created *podRecord
}

// Start validates cfg, fills its defaults and launches the adapter once
// for the run. The caller must Close the Suite.
func Start(ctx context.Context, cfg Config) (*Suite, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return startSuite(ctx, cfg.withDefaults())
}

// startSuite launches the adapter once for the run.
func startSuite(ctx context.Context, cfg Config) (*Suite, error) {
	adapter, err := launchAdapter(ctx, cfg, cfg.AdapterArgs)
	if err != nil {
		return nil, err
	}
	return &Suite{cfg: cfg, runID: newRunID(), adapter: adapter, shared: &sharedPods{}, created: &podRecord{}}, nil
}

// Close removes the run's shared pods and ends the adapter process.
func (s *Suite) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CleanupTimeout)
	defer cancel()
	if err := s.shared.release(ctx); err != nil {
		s.cfg.Logger.Warn("remove the run's shared pods", "err", err)
	}
	if err := s.adapter.Close(); err != nil {
		s.cfg.Logger.Warn("close adapter", "err", err)
	}
}

// Selected reports whether the check with this ID runs under the Config's
// Focus and Skip.
func (s *Suite) Selected(id string) bool {
	return s.cfg.selected(id)
}

// info asks the shared adapter what it is, for the report's header.
func (s *Suite) info(ctx context.Context) runtime.Info {
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	info, err := s.adapter.Info(callCtx)
	if err != nil {
		s.cfg.Logger.Warn("adapter Info failed", "err", err)
	}
	return info
}

// RunCheck runs one check, releases what it created and builds its result.
func (s *Suite) RunCheck(ctx context.Context, check Check) Result {
	sess := &session{cfg: s.cfg, checkID: check.ID, runID: s.runID, adapter: s.adapter, fixture: s.cfg.Fixture,
		res: &resources{}, shared: s.shared, created: s.created}
	start := time.Now()
	s.cfg.Logger.Debug("check started", "check", check.ID)
	err := check.run(ctx, sess)
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CleanupTimeout)
	defer cancel()
	if cleanupErr := sess.res.releaseAll(cleanupCtx); cleanupErr != nil {
		sess.note("clean-up: %v", cleanupErr)
	}
	if s.adapter.Exited() {
		err = errors.Join(err, s.relaunch(ctx))
	}
	result := resultOf(Result{ID: check.ID, Rule: check.Rule, Statement: check.Statement}, err)
	if result.Status == StatusFail && ctx.Err() != nil {
		result.Status, result.Reason = StatusSkip, fmt.Sprintf("interrupted (%v): %s", context.Cause(ctx), result.Reason)
	}
	result.Notes = sess.notes
	result.Seconds = time.Since(start).Seconds()
	s.cfg.Logger.Debug("check finished", "check", check.ID, "status", result.Status, "reason", result.Reason)
	return result
}

// relaunch replaces a dead shared adapter so the checks after a crash still
// run, and returns the failure to charge to the check it died in.
func (s *Suite) relaunch(ctx context.Context) error {
	died := fmt.Errorf("%w (pid %d)", ErrAdapterExited, s.adapter.PID())
	_ = s.adapter.Close()
	adapter, err := launchAdapter(ctx, s.cfg, s.cfg.AdapterArgs)
	if err != nil {
		return errors.Join(died, fmt.Errorf("relaunch: %w", err))
	}
	s.adapter = adapter
	return died
}

// RunChecks runs every selected check against the adapter and returns the
// report. It fails only for an invalid Config; an adapter that does not
// start is a failed LaunchCheckID result in the report. reporter may be nil.
// When ctx ends, the running check is cleaned up and the rest are skipped.
func RunChecks(ctx context.Context, cfg Config, reporter Reporter) (report Report, err error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	if reporter == nil {
		reporter = nopReporter{}
	}
	report = Report{Adapter: cfg.AdapterPath, AdapterArgs: cfg.AdapterArgs, Fixture: fixtureName(cfg.Fixture), StartedAt: time.Now()}
	defer func() { report.Seconds = time.Since(report.StartedAt).Seconds() }()
	suite, err := startSuite(ctx, cfg)
	if err != nil {
		launch := Result{ID: LaunchCheckID, Rule: "contract: the adapter is a go-plugin binary that calls plugin.Serve",
			Statement: "the adapter process starts and completes the plugin handshake", Status: StatusFail, Reason: err.Error()}
		reporter.CheckFinished(launch)
		report.Results = append(report.Results, launch)
		report.Results = append(report.Results, skipAll(cfg, reporter, "the adapter did not start")...)
		return report, nil
	}
	defer suite.Close()
	report.Info = suite.info(ctx)
	if cfg.Benchmark {
		report.Benchmark = suite.benchmark(ctx, reporter)
		report.Interrupted = ctx.Err() != nil
		return report, nil
	}
	for _, check := range selectedChecks(cfg) {
		if ctx.Err() != nil {
			report.Interrupted = true
			report.Results = append(report.Results, skipOne(check, reporter, "interrupted"))
			continue
		}
		reporter.CheckStarted(check)
		result := suite.RunCheck(ctx, check)
		reporter.CheckFinished(result)
		report.Results = append(report.Results, result)
	}
	report.Interrupted = report.Interrupted || ctx.Err() != nil
	return report, nil
}

// FailureText is a failed result's reason with its expected and actual
// values.
func FailureText(r Result) string { return failureText(r) }

// failureText is a failed result's reason with its expected and actual values.
func failureText(r Result) string {
	text := r.Reason
	if r.Expected != "" || r.Actual != "" {
		text += fmt.Sprintf("\nexpected: %s\nactual:   %s", r.Expected, r.Actual)
	}
	return text
}

// selectedChecks returns the checks Focus and Skip select, in run order.
func selectedChecks(cfg Config) []Check {
	var checks []Check
	for _, check := range Checks() {
		if cfg.selected(check.ID) {
			checks = append(checks, check)
		}
	}
	return checks
}

// skipAll reports every selected check as skipped for reason.
func skipAll(cfg Config, reporter Reporter, reason string) []Result {
	var results []Result
	for _, check := range selectedChecks(cfg) {
		results = append(results, skipOne(check, reporter, reason))
	}
	return results
}

// skipOne reports one check as skipped for reason.
func skipOne(check Check, reporter Reporter, reason string) Result {
	result := Result{ID: check.ID, Rule: check.Rule, Statement: check.Statement, Status: StatusSkip, Reason: reason}
	reporter.CheckFinished(result)
	return result
}

// fixtureName names the fixture for the report.
func fixtureName(f fixture.Fixture) string {
	if f == nil {
		return "none"
	}
	return f.Name()
}

// nopReporter is the Reporter used when the caller gives none.
type nopReporter struct{}

func (nopReporter) CheckStarted(Check)   {}
func (nopReporter) CheckFinished(Result) {}
