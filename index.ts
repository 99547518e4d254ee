/**
 * `pulumi up` for one stack (`qa`, `prod`): the whole installation procedure from the stack's `hubExport:` config.
 * Pulumi calls the exported function and turns what it returns into the stack outputs.
 */
import { hubExportProgram } from "./components/program";

export = () => hubExportProgram();
