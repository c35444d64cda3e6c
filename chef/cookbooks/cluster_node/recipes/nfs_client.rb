# frozen_string_literal: true

# NFS mounts of the site's exports on every server but the NFS server itself (which bind-mounts them).
nfs = node['cluster_node']['nfs']
return if nfs_server?

package 'nfs-common'

nfs['exports'].each do |e|
  directory e['mount'] do
    recursive true
  end

  mount e['mount'] do
    device "#{nfs['server_ip']}:#{e['path']}"
    fstype 'nfs'
    options nfs['mount_options'].split(',')
    pass 0 # fstab's fsck order: never for an NFS or bind mount (Chef's default is 2)
    action %i(mount enable)
  end
end
