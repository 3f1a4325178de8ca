"""cblite.aio: change listeners, live queries and replication events as async iterators."""

import asyncio

import cblite
from cblite import aio


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_changes_async(db, coll):
    async def main():
        seen = []
        it = aio.changes(db)
        task = asyncio.ensure_future(it.__anext__())
        await asyncio.sleep(0.05)          # the listener is registered on first next()
        # writes from another thread while the loop waits
        await asyncio.get_running_loop().run_in_executor(None, coll.put, {"n": 1}, "a")
        seen.extend(c.doc_id for c in await task)
        await asyncio.get_running_loop().run_in_executor(None, coll.put, {"n": 2}, "b")
        seen.extend(c.doc_id for c in await it.__anext__())
        await it.aclose()                  # removes the listener
        return seen
    assert run(main()) == ["a", "b"]
    assert cblite.live_listener_count() == 0


def test_document_changes_async_end_when_the_database_closes(dbdir):
    db = cblite.Database("aio", dbdir)

    async def main():
        got = []
        loop = asyncio.get_running_loop()

        async def reader():
            async for changes in aio.changes(db, doc_id="x"):
                got.extend((c.doc_id, c.rev_id[:2]) for c in changes)
        task = asyncio.ensure_future(reader())
        await asyncio.sleep(0.1)
        await loop.run_in_executor(None, db.put, {"v": 1}, "other")
        await loop.run_in_executor(None, db.put, {"v": 1}, "x")
        while not got:
            await asyncio.sleep(0.02)
        db.close()
        await task                         # ends by itself
        return got
    assert run(main()) == [("x", "1-")]


def test_live_query_async(db, coll):
    coll.put({"k": 1}, "a")
    view = coll.view("v")
    view.set_map_reduce(lambda d, emit: emit(d["k"]))

    async def main():
        results = []
        loop = asyncio.get_running_loop()
        async for rows in aio.live_query(view, reduce=False):
            results.append([r.key for r in rows])
            if len(results) == 1:
                await loop.run_in_executor(None, coll.put, {"k": 2}, "b")
            else:
                break                      # stops the live query
        return results
    assert run(main()) == [[1], [1, 2]]
    assert cblite.views.live_query_count() == 0
    view.release()


def test_replication_events_async(dbdir, db):
    db.put({"n": 1}, "a")
    other = cblite.Database("peer", dbdir)
    try:
        with cblite.Server() as server:
            server.serve("peer", other)

            async def main():
                r = db.replicate(server.url + "peer", direction="push")
                kinds = [e.kind async for e in aio.replication_events(r)]
                r.stop()
                return kinds, r.status()
            kinds, status = run(main())
        assert kinds and kinds[-1] == "status" and status["activity"] == "stopped"
        assert status["documents_pushed"] == 1 and other["a"]["n"] == 1
    finally:
        other.close()
