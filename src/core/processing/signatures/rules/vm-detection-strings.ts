// Fires when the sample's strings name virtual-machine or sandbox artefacts (VirtualBox, VMware,
// QEMU, Sandboxie, Cuckoo's own agent): the sample probably checks where it runs before acting.
import type { SignatureRule } from '../signature'
import { strs } from '../../../reporting/report-view'

const ARTEFACTS = /\b(vboxservice|vboxtray|vboxguest|vboxmouse|virtualbox|vmtoolsd|vmwaretray|vmware tools|vmmouse|qemu-ga|qemu guest|sbiedll|sandboxie|cuckoomon|agent\.pyw|wine_get_unix_file_name|hgfs|prl_tools|xenservice)\b/i

export const vmDetectionStrings: SignatureRule = {
  name: 'vm_detection_strings',
  description: 'Contains names of virtual-machine or sandbox artefacts (possible evasion)',
  severity: 1,
  categories: ['anti-vm'],
  ttp: ['T1497.001'],
  run(report, mark) {
    const hits = new Set<string>()
    for (const s of strs(report, 'strings')) {
      const m = ARTEFACTS.exec(s)
      if (m && !hits.has(s)) { hits.add(s); mark.ioc('string', s, m[0]) }
    }
  }
}
