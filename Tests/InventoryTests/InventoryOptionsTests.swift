import InventoryCore
import Testing

@Suite("The inventory's command line")
struct InventoryOptionsTests {
    @Test("options with a value take the next argument or one after =; flags set the verbosity")
    func valid() throws {
        #expect(try InventoryOptions(arguments: []) == InventoryOptions())
        let log = try InventoryOptions(arguments: ["--log", "a.jsonl", "--quiet"])
        #expect(log.logPath == "a.jsonl" && log.verbosity == .quiet && log.replayPath == nil)
        let replay = try InventoryOptions(arguments: ["--replay=b.jsonl", "--verbose", "--verbose"])
        #expect(replay.replayPath == "b.jsonl" && replay.verbosity == .verbose)
        let data = try InventoryOptions(arguments: ["--data", "state", "--snapshot-every=250", "--log", "a.jsonl"])
        #expect(data.dataDirectory == "state" && data.snapshotEvery == 250 && data.logPath == "a.jsonl")
        #expect(try InventoryOptions(arguments: ["--data", "state"]).snapshotEvery == nil)
        #expect(try InventoryOptions(arguments: ["-h"]).showsHelp)
        #expect(try InventoryOptions(arguments: ["--quiet", "--help"]).showsHelp)
        let nats = try InventoryOptions(arguments: [
            "--nats", "nats://a:1, nats://b:2", "--stream", "S", "--snapshot-every=9",
        ])
        #expect(nats.natsServers == ["nats://a:1", "nats://b:2"] && nats.streamName == "S" && nats.snapshotEvery == 9)
        #expect(try InventoryOptions(arguments: ["--nats=nats://a:1", "--export", "e.jsonl"]).exportPath == "e.jsonl")
        #expect(try InventoryOptions(arguments: ["--nats=nats://a:1"]).streamReplicas == nil)
        #expect(try InventoryOptions(arguments: ["--nats=nats://a:1", "--replicas", "1"]).streamReplicas == 1)
        let secured = try InventoryOptions(arguments: [
            "--nats", "tls://a:1", "--nats-user", "r", "--nats-password-file", "p", "--nats-ca", "ca.pem",
            "--nats-cert", "c.pem", "--nats-key", "k.pem",
        ])
        #expect(secured.natsUser == "r" && secured.natsPasswordFile == "p" && secured.natsAuthority == "ca.pem")
        #expect(secured.natsCertificate == "c.pem" && secured.natsKey == "k.pem")
    }

    @Test(
        "a bad command line is a usage error naming the argument",
        arguments: [
            (["--bogus"], "unknown option '--bogus'"),
            (["-x"], "unknown option '-x'"),
            (["--log"], "--log needs a PATH"),
            (["--log="], "--log needs a PATH"),
            (["--replay", "--verbose"], "--replay needs a PATH"),
            (["--log", "a", "--log=b"], "--log is given twice"),
            (["--quiet=yes"], "--quiet takes no value"),
            (["--verbose", "--quiet"], "--quiet and --verbose cannot be used together"),
            (["--log", "a", "--replay", "b"], "--replay and --log cannot be used together"),
            (["--data", "d", "--replay", "b"], "--replay and --data cannot be used together"),
            (["--snapshot-every", "10"], "--snapshot-every needs --data or --nats"),
            (["--stream", "S"], "--stream needs --nats"),
            (["--export", "e.jsonl"], "--export needs --nats"),
            (["--replicas", "3"], "--replicas needs --nats"),
            (["--nats", "u", "--replicas", "0"], "--replicas needs a whole number of 1 or more"),
            (["--nats", "u", "--replicas=three"], "--replicas needs a whole number of 1 or more"),
            (["--nats-user", "r"], "--nats-user needs --nats"),
            (["--nats", "u", "--nats-password-file", "p"], "--nats-password-file needs --nats-user"),
            (
                ["--nats", "u", "--nats-user", "r", "--nats-creds", "c"],
                "--nats-user and --nats-creds cannot be used together"
            ),
            (
                ["--nats", "u", "--nats-token-file", "t", "--nats-creds", "c"],
                "--nats-token-file and --nats-creds cannot be used together"
            ),
            (["--nats", "u", "--nats-cert", "c"], "--nats-cert needs --nats-key"),
            (["--nats-ca", "ca.pem"], "--nats-ca needs --nats"),
            (["--nats", ","], "--nats needs at least one server URL, such as nats://127.0.0.1:4222"),
            (["--nats", "u", "--stream", "a.b"], "--stream needs a NAME of letters, digits, '-' and '_', not 'a.b'"),
            (["--nats", "u", "--data", "d"], "--nats and --data cannot be used together"),
            (["--nats", "u", "--replay", "r"], "--nats and --replay cannot be used together"),
            (
                ["--nats", "u", "--export", "e", "--snapshot-every", "5"],
                "--export and --snapshot-every cannot be used together"
            ),
            (["--data", "d", "--snapshot-every", "0"], "--snapshot-every needs a whole number of 1 or more"),
            (["--data", "d", "--snapshot-every=ten"], "--snapshot-every needs a whole number of 1 or more"),
            (["--data", "d", "--snapshot-every", "-5"], "--snapshot-every needs a whole number of 1 or more"),
            (["input.jsonl"], "unexpected argument 'input.jsonl'; events come on standard input"),
        ]
    )
    func invalid(arguments: [String], problem: String) {
        #expect(throws: InventoryOptions.UsageError(problem)) { try InventoryOptions(arguments: arguments) }
    }

    @Test("every option is documented in the one-line usage, and every conflict names two options")
    func table() {
        let names = InventoryOptions.options.flatMap(\.names)
        for option in InventoryOptions.options where option.names[0] != "--help" {
            #expect(InventoryOptions.shortUsage.contains(option.names[0]), "\(option.names[0])")
        }
        for (first, second) in InventoryOptions.conflicts {
            #expect(names.contains(first) && names.contains(second))
        }
    }
}
