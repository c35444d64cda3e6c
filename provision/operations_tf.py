"""Values the operations root templates (terraform/roots/{region,global}/operations.tf.j2) read: the alert
destination, the etcd snapshots, AWS Backup's copy region, the budget (issue 29, docs/operations.md). Plain data
from the spec; nothing is decided in Jinja."""

from __future__ import annotations

from clusterspec.names import ALERTMANAGER_SERVICE_ACCOUNT, MONITORING_NAMESPACE
from clusterspec.spec import Cluster


def operations_context(cluster: Cluster) -> dict:
    ops = cluster.operations
    alerts = ops.alerts
    budget = ops.budget
    return {
        "email": (alerts.email if alerts else None) or "",
        "webhook": (alerts.webhook if alerts else None) or "",
        "etcd_every_h": ops.backups.etcd_every_h,
        "keep_days": ops.backups.keep_days,
        "copy_region": cluster.backup_copy_region or "",
        "warn_days": ops.certificate_warn_days,
        "ssh_idle_stop_min": ops.ssh_idle_stop_min,
        "monitoring_namespace": MONITORING_NAMESPACE,
        "alertmanager_service_account": ALERTMANAGER_SERVICE_ACCOUNT,
        "budget": (
            {
                "monthly_usd": budget.monthly_usd,
                "forecast_alert_percent": list(budget.forecast_alert_percent),
                "actual_alert_percent": list(budget.actual_alert_percent),
            }
            if budget
            else None
        ),
    }
