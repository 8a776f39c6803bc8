#!/bin/busybox sh
# Stage 1 of the Aviary test guest's boot: PID 1 from the initramfs. Debian's kernel builds the
# virtio and ext4 drivers as modules, so this loads them (the build script wrote the list below in
# dependency order, from modules.dep), mounts the root file system from the qcow2 disk (/dev/vda)
# and hands over to busybox init there. The initramfs stays ~1 MB: a 100 MB agent inside it would
# be unpacked into RAM on every cold boot (measured slower, see scripts/build-test-guest.mjs).
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "aviary-guest: stage 1"
for m in @MODULES@; do
  insmod "/modules/$m" || echo "aviary-guest: insmod $m failed"
done
i=0
while [ ! -b /dev/vda ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if ! mount -t ext4 /dev/vda /newroot; then
  # Stay up so the serial log keeps the reason; the fixture times out and prints it.
  echo "aviary-guest: FAILED to mount /dev/vda"
  while :; do sleep 3600; done
fi
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
