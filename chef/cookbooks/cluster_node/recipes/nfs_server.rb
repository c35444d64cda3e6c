# frozen_string_literal: true

# The site's NFS server: exports home directories, datasets and results to exactly the sites' servers (by
# address), and bind-mounts them where every other server NFS-mounts them. A per-user export (homes, results)
# gets each researcher's own folder, theirs alone (0700): the lab's volumes mount <export>/<user>
# (provision/storage.py); homes are the users recipe's.
nfs = node['cluster_node']['nfs']

package 'nfs-kernel-server'

nfs['exports'].each do |e|
  directory e['path'] do
    owner 'root'
    group 'root'
    mode '0755'
    recursive true
  end

  directory e['mount'] do
    recursive true
  end

  mount e['mount'] do
    device e['path']
    fstype 'none'
    options %w(bind)
    pass 0 # fstab's fsck order: never for an NFS or bind mount (Chef's default is 2)
    action %i(mount enable)
  end
end

nfs['exports'].select { |e| e['per_user'] && e['mount'] != '/home' }.each do |e|
  node['cluster_node']['users'].each do |u|
    directory ::File.join(e['path'], u['name']) do
      owner u['uid'].to_s
      group u['uid'].to_s
      mode '0700'
    end
  end
end

execute 'exportfs -ra' do
  action :nothing
end

template '/etc/exports' do
  source 'exports.erb'
  owner 'root'
  group 'root'
  mode '0644'
  notifies :run, 'execute[exportfs -ra]', :immediately
end

service 'nfs-server' do
  action %i(enable start)
end
