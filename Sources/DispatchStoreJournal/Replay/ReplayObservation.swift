/// Where a replay finds its ``ReplayObserver``.
package enum ReplayObservation {
    /// The observer of the replays and recoveries started while it is bound (on this thread or task).
    @TaskLocal package static var observer: (any ReplayObserver)?
}
