import TestSupport
import Testing

@Suite("The main queue on Linux, in a real program")
struct MainQueueProgramTests {
    @Test(
        ".mainThread runs on the main queue under RunLoop.main.run() and dispatchMain()",
        arguments: ["runloop", "dispatchmain"]
    )
    func mainQueueDrivers(driver: String) async throws {
        let output = try await offThePool { try Executables.run("MainQueueProbe", [driver]) }
        #expect(!output.timedOut)
        #expect(output.status == 0, "\(output.standardOutput)\(output.standardError)")
        #expect(output.standardOutput.hasPrefix("ok: count 202"))
    }
}
