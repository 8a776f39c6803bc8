// Desktop notifications (Electron's, shown by the platform's notification service).
import { Notification } from 'electron'

/** Shows a notification when the platform supports them; `onClick` brings the app forward. */
export function showNotification(title: string, body: string, onClick?: () => void): void {
  if (!Notification.isSupported()) return
  const n = new Notification({ title, body, silent: false })
  if (onClick) n.on('click', onClick)
  n.show()
}
