// `swift run inventory`: a small Linux service built on DispatchStore. It reads JSON Lines events
// from standard input, keeps three stores, logs to standard error, can write an action log, and on
// end of input, SIGTERM or SIGINT drains what is in flight and prints a JSON summary. The program is
// in InventoryCore (InventoryCommand), which the replicated inventory of Integrations/DispatchStoreNATS
// shares.

import InventoryCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct InventoryProgram {
    static func main() async {
        let options = InventoryCommand.parse(Array(CommandLine.arguments.dropFirst()))
        if options.natsServers != nil {
            ProgramOutput.writeError(
                "inventory: --nats needs the inventory built from Integrations/DispatchStoreNATS: "
                    + "swift run --package-path Integrations/DispatchStoreNATS inventory --nats URL"
            )
            ProgramOutput.writeError(InventoryOptions.shortUsage)
            exit(64)
        }
        await InventoryCommand.run(options)
    }
}
