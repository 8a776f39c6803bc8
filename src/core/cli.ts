// Placeholder entry; replaced by the real command line below.
export async function main(_argv: string[]): Promise<number> {
  return 0
}
