//! GPU telemetry from Prometheus: instant queries on the exporter's metrics, labels discovered.
