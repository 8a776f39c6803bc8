#!/usr/bin/env bash
# Debian packages Aviary's service and tests use. Run as root (CI does, from .ci/run).
#   file, ssdeep   reference tools: file_type comes from file(1); tests check ssdeep against it
#   bzip2          compresses result archives (pure-JS bzip2 is far slower) and unpacks .tar.bz2
#   zip unzip p7zip-full  the tests build and read real (also encrypted) zip archives
#   wrk            the HTTP load generator of bench/
#   tcpdump        per-task packet capture (the engine runs it; tests read pcaps with tcpdump -r)
#   strace iproute2 procps  the analyzer traces samples with strace; tests build guests in network
#                  namespaces (ip netns, veth)
#   libvirt-*, qemu-*, dnsmasq-base  the kvm driver: libvirtd (its test hypervisor and a real QEMU
#                  guest under TCG), virsh, and the headers @unraid/libvirt compiles against
#   busybox-static cpio  build the small Linux test guest's initramfs
#   tshark         the oracle the pcap-processing tests compare every decoded field with
#   yara           YARA rules over samples, dropped files and memory dumps (or YARA-X, see docs)
#   python3-jsonschema  the second, independent validator of docs/report.schema.json (the one
#                  Python consumers call: jsonschema.validate(report, schema))
#   liblnk-utils   lnkinfo, the oracle the Windows shortcut (static.lnk) tests compare fields with
#   postgresql     the dispatcher's shared database; its tests start a throwaway cluster
#   nginx-light    checks the reverse-proxy configuration `aviary dist --nginx` prints
#   chromium fonts-dejavu-core  the browser the UI's Playwright tests and bench drive (Playwright's
#                  own browser download is not reachable here)
#   nftables inetsim mitmproxy  the routes (docs/network.md): the rooter's firewall rules, the fake
#                  internet, the decrypting proxy
#   iputils-ping libcap2-bin openssl  the routing tests: guests ping, a tcpdump copy gets capabilities
#                  (setcap) for the unprivileged service, the lab's servers get a certificate
#   wine wine64 gcc-mingw-w64-x86-64  Windows guests: the Wine test bed runs the Windows agent under
#                  Wine, and mingw-w64 builds the analyzer's Windows helper (aviary-winmon.exe) and the
#                  test samples (no xvfb: the agent, the helper and the samples are console programs)
#   gcc-mingw-w64-i686  the static analyser's PE32 (i386) test builds its 32-bit sample with it
#   xorriso ovmf swtpm swtpm-tools  `aviary machines create windows`: the answer medium (xorriso),
#                  UEFI firmware (OVMF) and the TPM 2.0 libvirt starts for Windows 11 (swtpm)
#   wimtools genisoimage libxml2-utils  its tests: a stand-in install.wim (wimcapture, wiminfo as
#                  the oracle) in a UDF ISO (genisoimage), domain XML checked by virt-xml-validate
#                  (which runs xmllint; the Linux builder's XML too)
#   debvm mmdebstrap uidmap acl  `aviary machines create linux`: the Debian guest image is built by
#                  debvm-create over mmdebstrap (as a user in a user namespace: uidmap's newuidmap),
#                  `aviary setup` lets libvirt's QEMU into the data folder (setfacl)
#   suricata (bookworm-backports, 7.0.x)  the IDS step of processing runs it offline over each
#                  task's pcap (docs/network.md, "The IDS step"); bookworm's main has no suricata 7,
#                  so the backports suite is added when it is missing. The package's own service
#                  (a live IDS on the host's interface) is not what Aviary needs: it is disabled
#                  when this script installed the package.
set -euo pipefail
PACKAGES=(file ssdeep bzip2 zip unzip p7zip-full tar python3 wrk curl tcpdump strace iproute2 procps
  libvirt-daemon-system libvirt-clients libvirt-dev qemu-system-x86 qemu-utils dnsmasq-base busybox-static cpio
  tshark yara python3-jsonschema liblnk-utils chromium fonts-dejavu-core postgresql nginx-light
  nftables inetsim mitmproxy iputils-ping libcap2-bin openssl
  wine wine64 gcc-mingw-w64-x86-64 gcc-mingw-w64-i686
  xorriso ovmf swtpm swtpm-tools wimtools genisoimage libxml2-utils
  debvm mmdebstrap uidmap acl)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
suricata_missing=0
dpkg-query -W -f='${Status}' suricata 2>/dev/null | grep -q 'install ok installed' || suricata_missing=1
if [ ${#missing[@]} -eq 0 ] && [ "$suricata_missing" -eq 0 ]; then
  echo "debian deps: all present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "debian deps: missing ${missing[*]}; run this script as root (sudo $0)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ "$suricata_missing" -eq 1 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
fi
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$suricata_missing" -eq 1 ]; then
  apt-get install -y -qq --no-install-recommends -t bookworm-backports suricata >/dev/null
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then systemctl disable --now suricata >/dev/null 2>&1 || true; fi
  missing+=(suricata)
fi
echo "debian deps: installed ${missing[*]}"
