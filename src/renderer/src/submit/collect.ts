// Files from a drop or a picker, folders included. A dropped folder is walked with the entries
// API (DataTransferItem.webkitGetAsEntry), the only way a page can read a dropped directory.

export interface PickedFile { file: File; /** Path inside the dropped or picked folder, else the name. */ path: string }

/** Must be called during the drop event: the items are gone once the handler returns. */
export function entriesOf(dt: DataTransfer): { entries: FileSystemEntry[]; files: File[] } {
  const entries: FileSystemEntry[] = []
  const files: File[] = []
  for (const item of Array.from(dt.items ?? [])) {
    if (item.kind !== 'file') continue
    const entry = typeof item.webkitGetAsEntry === 'function' ? item.webkitGetAsEntry() : null
    if (entry) entries.push(entry)
    else {
      const f = item.getAsFile()
      if (f) files.push(f)
    }
  }
  // Browsers without items (or with only plain files) still have dt.files.
  if (!entries.length && !files.length) files.push(...Array.from(dt.files ?? []))
  return { entries, files }
}

const fileOf = (entry: FileSystemFileEntry) => new Promise<File>((resolve, reject) => entry.file(resolve, reject))

function readAll(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  // readEntries answers in batches (100 in Chromium) until it answers an empty one.
  const reader = dir.createReader()
  const all: FileSystemEntry[] = []
  return new Promise((resolve, reject) => {
    const next = () => reader.readEntries((batch) => {
      if (!batch.length) return resolve(all)
      all.push(...batch)
      next()
    }, reject)
    next()
  })
}

/** Every file under the dropped entries, depth first, with its relative path. */
export async function walkEntries(entries: FileSystemEntry[], limit = 10_000): Promise<PickedFile[]> {
  const out: PickedFile[] = []
  const stack = [...entries].reverse()
  while (stack.length && out.length < limit) {
    const entry = stack.pop() as FileSystemEntry
    if (entry.isFile) out.push({ file: await fileOf(entry as FileSystemFileEntry), path: entry.fullPath.replace(/^\//, '') || entry.name })
    else if (entry.isDirectory) stack.push(...(await readAll(entry as FileSystemDirectoryEntry)).reverse())
  }
  return out
}

/** Files of an <input type=file> (with webkitdirectory, each has its path in the folder). */
export function pickedFiles(list: FileList | null): PickedFile[] {
  return Array.from(list ?? []).map((file) => ({ file, path: file.webkitRelativePath || file.name }))
}
