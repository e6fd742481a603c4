-- Writers wake the followers of the events table after their commit (`store::wake`), not
-- from a trigger in their transaction: Postgres serializes the commits of notifying
-- transactions through the flush to disk, which bound event commits to one per flush.
DROP TRIGGER events_notify ON events;
DROP FUNCTION notify_events();
