/**
 * The Pulumi SDK loads TypeScript and npm's arborist when it starts (runtime/stack.js imports its closure serializer),
 * though only serializing a function uses them: about 0.4 CPU s of every command that loads the SDK (`plan`: a third).
 * Required from the serializer's folder, they load on first use instead. Nothing else changes: the first property read
 * loads the real module, which answers every read after it.
 */
import Module from "node:module";
import path from "node:path";

const LAZY = new Set(["../../typescript-shim", "@npmcli/arborist"]);
const CLOSURE_FOLDER = `${path.sep}@pulumi${path.sep}pulumi${path.sep}runtime${path.sep}closure${path.sep}`;

type Load = (request: string, parent: NodeModule | undefined, isMain: boolean) => unknown;
let installed = false;

export function loadSdkSerializerLazily(): void {
  if (installed) return;
  installed = true;
  const modules = Module as unknown as { _load: Load };
  const load = modules._load;
  modules._load = function (request, parent, isMain) {
    if (!LAZY.has(request) || !parent?.filename.includes(CLOSURE_FOLDER))
      return load.call(this, request, parent, isMain);
    let real: Record<PropertyKey, unknown> | undefined;
    const resolve = () => (real ??= load.call(this, request, parent, isMain) as Record<PropertyKey, unknown>);
    // `__esModule`: TypeScript's __importStar then keeps this object instead of copying every export at once.
    return new Proxy(
      {},
      {
        get: (_, key) => (key === "__esModule" ? true : resolve()[key]),
        has: (_, key) => key in resolve(),
        ownKeys: () => Reflect.ownKeys(resolve()),
        getOwnPropertyDescriptor: (_, key) => {
          const d = Reflect.getOwnPropertyDescriptor(resolve(), key);
          return d && { ...d, configurable: true };
        },
      },
    );
  };
}
