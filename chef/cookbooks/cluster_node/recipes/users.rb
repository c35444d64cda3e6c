# frozen_string_literal: true

# The researchers' accounts, the same uid everywhere (the NFS home directories depend on it), and access that
# survives NFS homes: sshd reads keys from /etc/ssh/authorized_keys/<user> (root-owned, outside /home), the keys of
# local accounts (the installer's admin) are copied there before /home is NFS-mounted, the spec's admins get sudo
# through a group, and sshd is checked (sshd -t) before it is reloaded. Homes live on the NFS export mounted at
# /home when there is one (written on the NFS server: clients squash root); admins' homes are on each server's own
# disk (admin_home_root), off the export, since a file there is run by someone with sudo.
nfs = node['cluster_node']['nfs']
home_export = nfs && nfs['exports'].find { |e| e['mount'] == '/home' }
write_homes = home_export.nil? || nfs_server?
home_root = home_export && nfs_server? ? home_export['path'] : '/home'
keys_dir = node['cluster_node']['authorized_keys_dir']
admin_group = node['cluster_node']['admin_group']
users = node['cluster_node']['users']
admin_root = node['cluster_node']['admin_home_root']

conflicts = ClusterNode::Access.uid_conflicts(users, ::File.read('/etc/passwd'))
unless conflicts.empty?
  raise "cluster_node: cluster.yaml users.uid taken by a local account (#{conflicts.join('; ')}): give the user " \
        'another uid; a shared uid owns the local account\'s home and what it runs with sudo'
end

directory keys_dir do
  owner 'root'
  group 'root'
  mode '0755'
end

ruby_block 'keep local SSH keys outside /home' do
  block do
    nfs_mounted = ClusterNode::Access.nfs_mount?('/home', ::File.read('/proc/mounts'))
    copied = ClusterNode::Access.preserve_local_keys('/home', keys_dir, nfs_mounted: nfs_mounted)
    Chef::Log.info("SSH keys kept in #{keys_dir} for: #{copied.join(', ')}") unless copied.empty?
  end
end

directory home_root do
  recursive true
  only_if { write_homes }
end

users.each do |u|
  group u['name'] do
    gid u['uid']
  end

  user u['name'] do
    uid u['uid']
    gid u['uid']
    home ClusterNode::Access.home(u, admin_root)
    shell '/bin/bash'
    manage_home false
  end

  file ::File.join(keys_dir, u['name']) do
    content "#{u['ssh_keys'].join("\n")}\n"
    owner 'root'
    group 'root'
    mode '0644'
  end

  if u['admin']
    directory admin_root do
      owner 'root'
      group 'root'
      mode '0755'
    end

    directory ClusterNode::Access.home(u, admin_root) do
      owner u['name']
      group u['name']
      mode '0700'
    end
  end

  next unless write_homes

  home = ::File.join(home_root, u['name'])
  directory home do
    owner u['name']
    group u['name']
    mode '0700'
  end
end

admins = users.select { |u| u['admin'] }.map { |u| u['name'] }
group admin_group do
  members admins
  append false
end

template "/etc/sudoers.d/#{admin_group}" do
  source 'sudoers.erb'
  owner 'root'
  group 'root'
  mode '0440'
  variables(group: admin_group)
  verify 'visudo -cf %{path}' # rubocop:disable Style/FormatStringToken -- Chef's placeholder for the temp file
end

execute 'sshd -t' do
  action :nothing
  notifies :reload, 'service[ssh]', :immediately
end

template '/etc/ssh/sshd_config.d/50-cluster-authorized-keys.conf' do
  source 'sshd-authorized-keys.conf.erb'
  owner 'root'
  group 'root'
  mode '0644'
  variables(keys_dir: keys_dir)
  notifies :run, 'execute[sshd -t]', :immediately
end

service 'ssh' do
  action :nothing
end
