// Package monitoring holds what operators load into Prometheus and
// Grafana to watch ipamd: alerting rules (ipamd.rules.yaml, with their
// promtool unit tests in ipamd.rules.test.yaml) and a dashboard
// (ipamd-dashboard.json) for the same figures; and, for the cluster pool's
// reclaimer, cluster.rules.yaml (tested by cluster.rules.test.yaml),
// which fires on any address two pods hold anywhere in the cluster. It has no Go code of its
// own; its tests run promtool on the rules, lint a real scrape with
// promtool check metrics, and check that the rules and the dashboard
// name only metrics ipamd exports, so a renamed metric cannot silently
// blind an alert.
package monitoring
