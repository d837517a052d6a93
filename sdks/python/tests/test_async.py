"""The async client makes a capture the same way."""

from __future__ import annotations

import asyncio

import pytest

from capture_client import AsyncCapture, NotFoundError, ValidationError
from png import read_png


def test_async_capture_wait_download(service, api_key, site, tmp_path):
    async def main():
        async with AsyncCapture(service.base, api_key) as client:
            job = await client.screenshots.create(url=site.url("/async"), width=280, height=210)
            assert job.id.startswith("scr_") and job.status in ("pending", "processing", "done")
            await job.wait(timeout=120)
            assert job.status == "done"
            png = await job.download()
            path = await job.download(tmp_path / "async.png")
            again = await client.screenshots.get(job.id)
            listed = [j.id async for j in client.screenshots.iter(limit=1)]
            balance = await client.account.balance()
            return job, png, path, again, listed, balance

    job, png, path, again, listed, balance = asyncio.run(main())
    img = read_png(png)
    assert (img.width, img.height) == (280, 210)
    assert path.read_bytes() == png
    assert again.id == job.id and again.status == "done"
    assert job.id in listed
    assert balance["usage"]["used"] >= 1


def test_async_errors_and_bulk(service, site):
    key = service.new_key("async-b")

    async def main():
        async with AsyncCapture(service.base, key) as client:
            with pytest.raises(NotFoundError) as e:
                await client.screenshots.get("scr_00000000000000000000000000")
            assert e.value.code == "NOT_FOUND"
            with pytest.raises(ValidationError) as e2:
                await client.screenshots.create(url=site.url("/"), height=-1)
            assert e2.value.code == "VALIDATION_ERROR"
            batch = await client.screenshots.bulk([{"url": site.url(f"/ab{i}")} for i in range(3)], defaults={"width": 200, "height": 100})
            jobs = await batch.wait(timeout=180)
            pages = [j.id async for j in client.screenshots.iter(limit=2)]
            return batch, jobs, pages

    batch, jobs, pages = asyncio.run(main())
    assert [j.status for j in jobs] == ["done"] * 3
    assert sorted(pages) == sorted(j.id for j in batch.jobs)


def test_async_job_polling_fallback(service, api_key, site):
    import httpx

    class NoStreams(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request):
            if request.url.path.endswith("/stream"):
                raise httpx.ConnectError("no streams", request=request)
            return await super().handle_async_request(request)

    async def main():
        async with httpx.AsyncClient(transport=NoStreams()) as http:
            client = AsyncCapture(service.base, api_key, http_client=http)
            job = await client.screenshots.create(url=site.url("/async-poll"), width=200, height=100)
            await job.wait(timeout=120)
            return job

    assert asyncio.run(main()).status == "done"
