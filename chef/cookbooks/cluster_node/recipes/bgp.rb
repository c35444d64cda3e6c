# frozen_string_literal: true

# BIRD 2 on the site gateway: eBGP with each region's virtual private gateway over every tunnel's inside
# addresses; the configuration is checked by BIRD itself (`bird -p`) before it replaces the running one.
package 'bird2'

template '/etc/bird/bird.conf' do
  source 'bird.conf.erb'
  owner 'bird'
  group 'bird'
  mode '0640'
  verify '/usr/sbin/bird -p -c %{path}' # rubocop:disable Style/FormatStringToken (Chef's own placeholder)
  notifies :reload, 'service[bird]', :delayed
end

service 'bird' do
  action %i(enable start)
end
