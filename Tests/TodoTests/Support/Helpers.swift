import Foundation
import TestSupport

struct ProgramOutput {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs the built `todo` with `arguments`, piping `input` to it.
func runTodo(
    _ arguments: [String],
    input: String = "",
    environment: [String: String] = [:],
    timeout: TimeInterval = 60
) async throws -> ProgramOutput {
    let output = try await offThePool {
        try Executables.run("todo", arguments, input: Data(input.utf8), environment: environment, timeout: timeout)
    }
    return ProgramOutput(
        status: output.status,
        standardOutput: output.standardOutput,
        standardError: output.standardError
    )
}
