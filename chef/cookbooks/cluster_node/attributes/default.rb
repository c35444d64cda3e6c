# frozen_string_literal: true

# Everything else under node['cluster_node'] comes from build/chef/<site>.json (`invoke chef-attributes`).
# This server's entry in node['cluster_node']['servers']; nil means the host name (ohai's node['hostname']).
default['cluster_node']['server'] = nil
default['cluster_node']['image_scripts_dir'] = '/var/lib/cluster-node/image-scripts'
default['cluster_node']['swanctl_dir'] = '/etc/swanctl/conf.d'
default['cluster_node']['kubeadm_join_config'] = '/etc/kubernetes/kubeadm-join.yaml'
# SSH keys outside the NFS homes (sshd's AuthorizedKeysFile) and the sudo group of the spec's admins.
default['cluster_node']['authorized_keys_dir'] = '/etc/ssh/authorized_keys'
default['cluster_node']['admin_group'] = 'cluster-admins'
# Admins' homes: on each server's own disk, never on the NFS export (libraries/access.rb, Access.home).
default['cluster_node']['admin_home_root'] = '/var/lib/cluster-admins'
# The image's package lock as the scripts and check.sh read it.
default['cluster_node']['package_lock_file'] = '/etc/cluster/package-lock'
# Version changes on a joined worker: cordon with this kubeconfig (an admin-provided credential allowed to patch
# nodes; without it the node is not cordoned) and wait while workload pods run.
default['cluster_node']['upgrade'] = {
  'kubeconfig' => '/etc/kubernetes/cluster-node-upgrade.conf',
  'kubelet_kubeconfig' => '/etc/kubernetes/kubelet.conf',
  'cordon_marker' => '/var/lib/cluster-node/cordoned-by-chef'
}
# Site credentials (recipe site_credentials, IAM Roles Anywhere): the server's certificate and key, the signing
# helper (aws_signing_helper; set the URL and AWS's published SHA-256 to have Chef install it) and the AWS
# config profile the cookbook's AWS CLI calls use.
default['cluster_node']['site_pki_dir'] = '/etc/cluster-node/pki'
default['cluster_node']['signing_helper'] = '/usr/local/bin/aws_signing_helper'
default['cluster_node']['signing_helper_url'] = nil
default['cluster_node']['signing_helper_sha256'] = nil
default['cluster_node']['aws_config'] = '/etc/cluster-node/aws-config'
default['cluster_node']['aws_profile'] = 'cluster-site'
