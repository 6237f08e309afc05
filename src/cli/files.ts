/**
 * Input files named on the command line: errors about a file's contents name the file.
 */
import { ChipcError } from '../util/errors.ts';

/**
 * Runs `body` (which reads the program `file`); an ELF error it throws (`elf.*`: a malformed file,
 * a program that does not fit) is rethrown with the same code and `file` in front of its message.
 */
export async function namingElfFile<T>(file: string, body: () => Promise<T> | T): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof ChipcError && e.code.startsWith('elf.') && !e.message.startsWith(`${file}: `)) {
      throw new ChipcError(e.code, `${file}: ${e.message}`, { cause: e });
    }
    throw e;
  }
}
