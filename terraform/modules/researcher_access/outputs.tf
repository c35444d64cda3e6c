output "credentials" {
  description = "What aws_signing_helper needs on a laptop (with the user's VPN certificate and key)."
  value = {
    trust_anchor_arn = aws_rolesanywhere_trust_anchor.lab.arn
    profile_arn      = aws_rolesanywhere_profile.laptops.arn
    role_arn         = aws_iam_role.laptop.arn
  }
}

output "trust_anchor_id" {
  description = "The trust anchor the revocation list of `invoke remove-user` is imported for."
  value       = aws_rolesanywhere_trust_anchor.lab.id
}
