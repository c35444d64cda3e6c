# frozen_string_literal: true

# The researchers' accounts, the same uid everywhere (the NFS home directories depend on it). Homes and SSH keys
# live on the NFS export mounted at /home when there is one (written on the NFS server: clients squash root).
nfs = node['cluster_node']['nfs']
home_export = nfs && nfs['exports'].find { |e| e['mount'] == '/home' }
write_homes = home_export.nil? || nfs_server?
home_root = home_export && nfs_server? ? home_export['path'] : '/home'

directory home_root do
  recursive true
  only_if { write_homes }
end

node['cluster_node']['users'].each do |u|
  group u['name'] do
    gid u['uid']
  end

  user u['name'] do
    uid u['uid']
    gid u['uid']
    home "/home/#{u['name']}"
    shell '/bin/bash'
    manage_home false
  end

  next unless write_homes

  home = ::File.join(home_root, u['name'])
  [home, ::File.join(home, '.ssh')].each do |dir|
    directory dir do
      owner u['name']
      group u['name']
      mode '0700'
    end
  end

  file ::File.join(home, '.ssh', 'authorized_keys') do
    content "#{u['ssh_keys'].join("\n")}\n"
    owner u['name']
    group u['name']
    mode '0600'
  end
end
