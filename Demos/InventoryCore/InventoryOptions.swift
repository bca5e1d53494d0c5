import Foundation

/// The command line of `inventory`, parsed.
///
/// The options are a table (``InventoryOptions/options``): each entry names the option, the value
/// it takes if any, and what it sets. A new option is one entry and one property; options that
/// cannot go together are one pair in ``InventoryOptions/conflicts``.
public struct InventoryOptions: Equatable, Sendable {
    /// `--log PATH`: where to write the action log.
    public var logPath: String?
    /// `--data DIR`: the directory that keeps the stores' states from run to run.
    public var dataDirectory: String?
    /// `--snapshot-every N`: how many events between two snapshots in the data directory; `nil`
    /// when not given (the service then takes 1,000).
    public var snapshotEvery: Int?
    /// `--replay PATH`: the action log to replay instead of reading standard input.
    public var replayPath: String?
    /// `--nats URL[,URL...]`: the NATS servers of the stream the stores are replicated through (the
    /// program built in `Integrations/DispatchStoreNATS`).
    public var natsServers: [String]?
    /// `--stream NAME`: the stream, with `--nats`; `nil` when not given (the program then takes
    /// `INVENTORY`).
    public var streamName: String?
    /// `--export PATH`: with `--nats`, write the stream as an action log to PATH instead of reading
    /// standard input.
    public var exportPath: String?
    /// `--replicas N`: with `--nats`, how many servers keep the stream and its snapshots; `nil` when
    /// not given (the replication then takes three on a cluster, as many as it has when fewer).
    public var streamReplicas: Int?
    /// `--nats-user NAME`: with `--nats`, the user the replica is to the servers; its password comes
    /// from `--nats-password-file` or the environment variable `NATS_PASSWORD`.
    public var natsUser: String?
    /// `--nats-password-file PATH`: the file holding the password of `--nats-user`.
    public var natsPasswordFile: String?
    /// `--nats-token-file PATH`: the file holding the token the replica gives the servers (or the
    /// environment variable `NATS_TOKEN`, when no other credentials are given).
    public var natsTokenFile: String?
    /// `--nats-creds PATH`: a credentials file (a user's JWT and NKey seed).
    public var natsCredentialsFile: String?
    /// `--nats-ca PATH`: the authorities that signed the servers' TLS certificates (PEM); TLS on.
    public var natsAuthority: String?
    /// `--nats-cert PATH`: the replica's TLS certificate (PEM), for servers that ask for one.
    public var natsCertificate: String?
    /// `--nats-key PATH`: that certificate's private key (PEM).
    public var natsKey: String?
    /// `--report PATH`: write the inspector's page of the run to PATH (`DispatchStoreInspector`): at
    /// the end, and on SIGUSR1 while running.
    public var reportPath: String?
    /// `--verbose` or `--quiet`.
    public var verbosity = InventoryService.Verbosity.normal
    /// `-h` or `--help`.
    public var showsHelp = false

    /// The usage in one line, for a usage error.
    public static let shortUsage =
        "usage: inventory [--data DIR [--snapshot-every N]] [--log PATH] [--report PAGE.html] [--verbose | --quiet] "
        + "< events.jsonl, or inventory --replay PATH [--report PAGE.html], "
        + "or inventory --nats URL[,URL...] [--stream NAME] [--replicas N] [--snapshot-every N] [--export PATH] "
        + "[--report PAGE.html] [--nats-user NAME [--nats-password-file PATH] | --nats-token-file PATH | "
        + "--nats-creds PATH] [--nats-ca PATH] [--nats-cert PATH --nats-key PATH]; "
        + "inventory --help explains"

    /// A command line the program cannot run: a sentence naming the argument.
    public struct UsageError: Error, Equatable, CustomStringConvertible {
        /// The sentence, for example `--quiet and --verbose cannot be used together`.
        public let description: String

        /// Creates an error described by `description`.
        public init(_ description: String) {
            self.description = description
        }
    }

    /// One option: its names, the name of its value if it takes one, and what it sets.
    public struct Option: Sendable {
        /// The names, the first being the one messages use: `["--help", "-h"]`.
        public let names: [String]
        /// What the value is called in messages (`PATH`), or `nil` for a flag.
        public let value: String?
        /// Sets the option (the value is empty for a flag).
        public let apply: @Sendable (inout InventoryOptions, String) -> Void

        /// Creates an option.
        public init(
            _ names: [String],
            value: String? = nil,
            apply: @escaping @Sendable (inout InventoryOptions, String) -> Void
        ) {
            self.names = names
            self.value = value
            self.apply = apply
        }
    }

    /// Every option the program takes.
    public static let options: [Option] = [
        Option(["--log"], value: "PATH") { $0.logPath = $1 },
        Option(["--data"], value: "DIR") { $0.dataDirectory = $1 },
        // A value that is not a whole number becomes 0, which the check after parsing refuses.
        Option(["--snapshot-every"], value: "N") { $0.snapshotEvery = Int($1) ?? 0 },
        Option(["--replay"], value: "PATH") { $0.replayPath = $1 },
        // An empty list (",") becomes [], which the check after parsing refuses.
        Option(["--nats"], value: "URL") { options, urls in
            options.natsServers = urls.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        },
        Option(["--stream"], value: "NAME") { $0.streamName = $1 },
        Option(["--export"], value: "PATH") { $0.exportPath = $1 },
        // A value that is not a whole number becomes 0, which the check after parsing refuses.
        Option(["--replicas"], value: "N") { $0.streamReplicas = Int($1) ?? 0 },
        Option(["--nats-user"], value: "NAME") { $0.natsUser = $1 },
        Option(["--nats-password-file"], value: "PATH") { $0.natsPasswordFile = $1 },
        Option(["--nats-token-file"], value: "PATH") { $0.natsTokenFile = $1 },
        Option(["--nats-creds"], value: "PATH") { $0.natsCredentialsFile = $1 },
        Option(["--nats-ca"], value: "PATH") { $0.natsAuthority = $1 },
        Option(["--nats-cert"], value: "PATH") { $0.natsCertificate = $1 },
        Option(["--nats-key"], value: "PATH") { $0.natsKey = $1 },
        Option(["--report"], value: "PATH") { $0.reportPath = $1 },
        Option(["--verbose"]) { options, _ in options.verbosity = .verbose },
        Option(["--quiet"]) { options, _ in options.verbosity = .quiet },
        Option(["--help", "-h"]) { options, _ in options.showsHelp = true },
    ]

    /// Pairs of options that cannot be used together, by their first names.
    public static let conflicts: [(String, String)] = [
        ("--quiet", "--verbose"),
        ("--replay", "--log"),
        ("--replay", "--data"),
        ("--nats", "--data"),
        ("--nats", "--log"),
        ("--nats", "--replay"),
        ("--export", "--snapshot-every"),
        ("--nats-user", "--nats-token-file"),
        ("--nats-user", "--nats-creds"),
        ("--nats-token-file", "--nats-creds"),
    ]

    /// Options that need another one, by their first names: the first needs one of the others.
    public static let requirements: [(String, [String])] = [
        ("--snapshot-every", ["--data", "--nats"]),
        ("--stream", ["--nats"]),
        ("--export", ["--nats"]),
        ("--replicas", ["--nats"]),
        ("--nats-user", ["--nats"]),
        ("--nats-password-file", ["--nats-user"]),
        ("--nats-token-file", ["--nats"]),
        ("--nats-creds", ["--nats"]),
        ("--nats-ca", ["--nats"]),
        ("--nats-cert", ["--nats-key"]),
        ("--nats-key", ["--nats-cert"]),
    ]

    /// The defaults: read standard input, no log, notable outcomes on standard error.
    public init() {}

    /// Parses the arguments (without the program's name).
    ///
    /// Options with a value take it as the next argument or after `=` (`--log=PATH`). An option
    /// with a value may be given once; a flag any number of times.
    ///
    /// - Parameter arguments: The command line's arguments.
    /// - Throws: ``UsageError`` for an unknown option, a missing value, an option given twice, two
    ///   options that conflict, an option without the one it needs, a snapshot interval that is not
    ///   a whole number of 1 or more, or an argument that is not an option.
    public init(arguments: [String]) throws(UsageError) {
        var seen: [String] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            let (name, inline) = Self.split(argument)
            guard let option = Self.options.first(where: { $0.names.contains(name) }) else {
                if argument.hasPrefix("-") { throw UsageError("unknown option '\(argument)'") }
                throw UsageError("unexpected argument '\(argument)'; events come on standard input")
            }
            let canonical = option.names[0]
            var value = ""
            if let valueName = option.value {
                if let inline {
                    value = inline
                } else if let next = remaining.first, !Self.isOption(next) {
                    value = next
                    remaining.removeFirst()
                }
                guard !value.isEmpty else { throw UsageError("\(canonical) needs a \(valueName)") }
                guard !seen.contains(canonical) else { throw UsageError("\(canonical) is given twice") }
            } else if inline != nil {
                throw UsageError("\(canonical) takes no value")
            }
            seen.append(canonical)
            option.apply(&self, value)
        }
        for (first, second) in Self.conflicts where seen.contains(first) && seen.contains(second) {
            throw UsageError("\(first) and \(second) cannot be used together")
        }
        for (option, needed) in Self.requirements where seen.contains(option) && !needed.contains(where: seen.contains)
        {
            throw UsageError("\(option) needs \(needed.joined(separator: " or "))")
        }
        if let natsServers, natsServers.isEmpty {
            throw UsageError("--nats needs at least one server URL, such as nats://127.0.0.1:4222")
        }
        if let streamName, (try? /[A-Za-z0-9_-]+/.wholeMatch(in: streamName)) == nil {
            throw UsageError("--stream needs a NAME of letters, digits, '-' and '_', not '\(streamName)'")
        }
        if let streamReplicas, streamReplicas < 1 {
            throw UsageError("--replicas needs a whole number of 1 or more")
        }
        if let snapshotEvery, snapshotEvery < 1 {
            throw UsageError("--snapshot-every needs a whole number of 1 or more")
        }
    }

    /// `--log=PATH` as `("--log", "PATH")`; `--log` as `("--log", nil)`.
    private static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// Whether `argument` is one of the options, so not the value of the one before it.
    private static func isOption(_ argument: String) -> Bool {
        let name = split(argument).name
        return options.contains { $0.names.contains(name) }
    }
}
