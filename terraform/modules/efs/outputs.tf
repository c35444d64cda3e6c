output "file_system_id" {
  description = "The EFS file system's id."
  value       = aws_efs_file_system.this.id
}

output "dns_name" {
  description = "The file system's DNS name (<id>.efs.<region>.amazonaws.com) for NFS mounts."
  value       = aws_efs_file_system.this.dns_name
}

output "arn" {
  description = "The file system's ARN (the resource of elasticfilesystem:Client* permissions)."
  value       = aws_efs_file_system.this.arn
}

output "mount_target_ips" {
  description = "Each zone's mount target address, by zone (other VPCs resolve the file system's name to these)."
  value       = { for k, t in aws_efs_mount_target.this : t.availability_zone_name => t.ip_address }
}

output "job_access_points" {
  description = "Per researcher, the access point ids of their home and results for pods ({alice = {home = \"fsap-...\", results = \"fsap-...\"}})."
  value       = { for u in var.users : u.name => { for d in ["home", "results"] : d => aws_efs_access_point.job["${u.name}/${d}"].id } }
}

output "shell_access_points" {
  description = "Per researcher, the SSH machines' access point ids of their home and results."
  value       = { for u in var.users : u.name => { for d in ["home", "results"] : d => aws_efs_access_point.shell["${u.name}/${d}"].id } if var.shell_access_points }
}

output "shell_access_point_arns" {
  description = "ARNs of the SSH machines' access points (their role may mount through these only)."
  value       = [for k in sort(keys(aws_efs_access_point.shell)) : aws_efs_access_point.shell[k].arn]
}

output "datasets_access_point" {
  description = "The access point id of the shared /datasets."
  value       = aws_efs_access_point.datasets.id
}

output "datasets_access_point_arn" {
  description = "The ARN of the /datasets access point."
  value       = aws_efs_access_point.datasets.arn
}
