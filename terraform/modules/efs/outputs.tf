output "file_system_id" {
  description = "The EFS file system's id."
  value       = aws_efs_file_system.this.id
}

output "dns_name" {
  description = "The file system's DNS name (<id>.efs.<region>.amazonaws.com) for NFS mounts."
  value       = aws_efs_file_system.this.dns_name
}
