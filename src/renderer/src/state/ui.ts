// UI state that outlives a page: the theme and which connection the pages show. Kept in
// localStorage so a reload (or the next launch of the app) comes back the same.
import { create } from 'zustand'
import { persist } from 'zustand/middleware'
import type { ConnectionId } from '../api/http'

export type Theme = 'light' | 'dark' | 'system'

interface UiState {
  theme: Theme
  setTheme(theme: Theme): void
  /** The connection the pages show; null = the local service. */
  connection: ConnectionId
  setConnection(connection: ConnectionId): void
}

export const useUi = create<UiState>()(
  persist(
    (set) => ({
      theme: 'system',
      setTheme: (theme) => set({ theme }),
      connection: null,
      setConnection: (connection) => set({ connection })
    }),
    { name: 'aviary-ui' }
  )
)

/** Applies the theme to <html> (the `dark` class that tailwind's dark: variant reads). */
export function applyTheme(theme: Theme, prefersDark: boolean): void {
  document.documentElement.classList.toggle('dark', theme === 'dark' || (theme === 'system' && prefersDark))
}
