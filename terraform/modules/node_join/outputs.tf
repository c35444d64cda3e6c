output "user_data" {
  description = "The instance's user data: the prelude, then the join installed as a systemd unit that retries with back-off."
  value = templatefile("${path.module}/templates/user_data.sh.tftpl", {
    prelude     = var.prelude
    join_script = local.join_script
    join_unit   = file("${path.module}/templates/cluster-join.service")
  })
}
