// The Tasks page's filters, scroll offset and selection outlive the page: opening a task and
// coming back shows the same rows, where they were. (Not persisted: a new session starts fresh.)
import { create } from 'zustand'

interface TasksView {
  statuses: string[]
  q: string
  scrollOffset: number
  selected: number
  toggleStatus(status: string): void
  clearStatuses(): void
  setQ(q: string): void
  setScrollOffset(offset: number): void
  setSelected(index: number): void
}

export const useTasksView = create<TasksView>()((set) => ({
  statuses: [],
  q: '',
  scrollOffset: 0,
  selected: 0,
  toggleStatus: (status) => set((s) => ({
    statuses: s.statuses.includes(status) ? s.statuses.filter((x) => x !== status) : [...s.statuses, status],
    scrollOffset: 0,
    selected: 0
  })),
  clearStatuses: () => set({ statuses: [], scrollOffset: 0, selected: 0 }),
  setQ: (q) => set({ q, scrollOffset: 0, selected: 0 }),
  setScrollOffset: (scrollOffset) => set({ scrollOffset }),
  setSelected: (selected) => set({ selected })
}))
