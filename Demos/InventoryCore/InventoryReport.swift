public import DispatchStoreInspector
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--report PATH`: the inspector's page of the run, written at the end and on SIGUSR1.
///
/// ``InventoryService`` registers the inspector before anything else (so that a journal's recovery
/// is on the page) and writes the page when it finishes; ``InventoryCommand/serve(_:stopper:accept:)``
/// writes it whenever the program receives SIGUSR1. Both programs (this package's and the
/// replicated one of Integrations/DispatchStoreNATS) get the report through
/// ``open(_:diagnostics:)`` and pass it to the service.
public final class InventoryReport: Sendable {
    /// Where the page goes.
    public let path: String
    /// The inspector that records the run.
    public let inspector: Inspector
    private let diagnostics: @Sendable (String) -> Void
    private let verbosity: InventoryService.Verbosity

    /// How many transactions a page of a running service keeps: the newest 10,000.
    public static let serviceLimit = Inspector.defaultLimit
    /// How many a page of a replayed log keeps: a million, so that a long log's page holds it all.
    public static let replayLimit = 1_000_000

    /// A report to `path`, checked before the service starts.
    ///
    /// - Parameters:
    ///   - path: Where to write the page.
    ///   - limit: How many transactions the page keeps.
    ///   - verbosity: Whether to say where the page was written (not when quiet).
    ///   - diagnostics: Writes a line for the operator.
    /// - Throws: `InspectorError` naming the path when no page can be written there.
    public init(
        path: String,
        limit: Int,
        verbosity: InventoryService.Verbosity,
        diagnostics: @escaping @Sendable (String) -> Void
    ) throws(InspectorError) {
        try Inspector.checkPagePath(path)
        self.path = path
        self.inspector = Inspector(limit: limit, title: "inventory")
        self.verbosity = verbosity
        self.diagnostics = diagnostics
    }

    /// The report `options` ask for (`--report`), or `nil`; exits with status 1 and an error naming
    /// the path when the page cannot be written there.
    ///
    /// - Parameters:
    ///   - options: The command line.
    ///   - diagnostics: Writes a line for the operator.
    /// - Returns: The report, or `nil` without `--report`.
    public static func open(
        _ options: InventoryOptions,
        diagnostics: @escaping @Sendable (String) -> Void = ProgramOutput.writeError
    ) -> InventoryReport? {
        guard let path = options.reportPath else { return nil }
        do {
            return try InventoryReport(
                path: path,
                limit: options.replayPath == nil ? serviceLimit : replayLimit,
                verbosity: options.verbosity,
                diagnostics: diagnostics
            )
        } catch {
            ProgramOutput.fail("\(error)")
        }
    }

    /// Writes the page now, saying where (unless quiet) or why it could not.
    ///
    /// - Returns: Whether the page was written.
    @discardableResult
    public func write() -> Bool {
        do {
            let written = try inspector.writePage(to: path)
            if verbosity != .quiet {
                let text = "\(written)"
                diagnostics("inventory: info: \(text.prefix(1).uppercased() + text.dropFirst()).")
            }
            return true
        } catch {
            diagnostics("inventory: error: \(error)")
            return false
        }
    }

    /// Writes the page whenever the program receives SIGUSR1.
    ///
    /// - Returns: The signal source; keep it.
    public func writeOnSignal() -> any DispatchSourceSignal {
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: DispatchQueue(label: "inventory.report"))
        source.setEventHandler { [self] in _ = write() }
        source.resume()
        return source
    }
}
