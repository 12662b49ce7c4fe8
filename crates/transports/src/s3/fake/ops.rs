//! The S3 operations the fake server answers (s3s's `S3` trait): buckets,
//! objects of zeroes, multipart uploads, listings.

use super::*;

#[async_trait::async_trait]
impl S3 for Fake {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let mut b = self.0.buckets.lock().expect("not poisoned");
        if b.contains_key(&req.input.bucket) {
            return Err(s3_error!(BucketAlreadyOwnedByYou));
        }
        if b.len() >= 1000 {
            return Err(s3_error!(TooManyBuckets));
        }
        b.insert(req.input.bucket, Bucket::default());
        ok(CreateBucketOutput::default())
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.0.with_bucket(&req.input.bucket, |_| Ok(()))?;
        ok(HeadBucketOutput::default())
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let mut b = self.0.buckets.lock().expect("not poisoned");
        match b.get(&req.input.bucket) {
            None => return Err(s3_error!(NoSuchBucket)),
            Some(x) if !x.objects.is_empty() => return Err(s3_error!(BucketNotEmpty)),
            Some(_) => {}
        }
        b.remove(&req.input.bucket);
        ok(DeleteBucketOutput::default())
    }

    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let b = self.0.buckets.lock().expect("not poisoned");
        let list = b
            .keys()
            .map(|name| s3s::dto::Bucket {
                name: Some(name.clone()),
                ..Default::default()
            })
            .collect();
        ok(ListBucketsOutput {
            buckets: Some(list),
            ..Default::default()
        })
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let i = req.input;
        self.0.with_bucket(&i.bucket, |_| Ok(()))?;
        let n = drain(i.body, i.content_length, &self.0.counters).await?;
        let etag = self.0.insert(&i.bucket, i.key, n, 0)?;
        ok(PutObjectOutput {
            e_tag: Some(etag),
            ..Default::default()
        })
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let i = req.input;
        let m = self.0.meta(&i.bucket, &i.key)?;
        let (range, content_range) = match &i.range {
            None => (0..m.size, None),
            Some(r) => {
                // An empty range (any range of an empty object) is
                // unsatisfiable, as S3 answers it.
                let r = r
                    .check(m.size)
                    .ok()
                    .filter(|r| r.start < r.end)
                    .ok_or_else(|| {
                        s3_error!(
                            InvalidRange,
                            "the range is outside the object's {} bytes",
                            m.size
                        )
                    })?;
                let cr = format!("bytes {}-{}/{}", r.start, r.end - 1, m.size);
                (r, Some(cr))
            }
        };
        let len = range.end - range.start;
        let body = Zeros {
            left: len,
            counters: self.0.counters.clone(),
        };
        let mut resp = S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::new(body)),
            content_length: Some(len as i64),
            content_range,
            accept_ranges: Some("bytes".into()),
            e_tag: Some(etag_of(m.etag, m.parts)),
            ..Default::default()
        });
        // Tells a verifying client to expect zeroes, not what it wrote.
        resp.headers
            .insert(FAKE_HEADER, http::HeaderValue::from_static("zeroes"));
        Ok(resp)
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let m = self.0.meta(&req.input.bucket, &req.input.key)?;
        ok(HeadObjectOutput {
            content_length: Some(m.size as i64),
            e_tag: Some(etag_of(m.etag, m.parts)),
            accept_ranges: Some("bytes".into()),
            ..Default::default()
        })
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let i = req.input;
        self.0.with_bucket(&i.bucket, |b| {
            if b.objects.remove(&i.key).is_some() {
                self.0.objects.fetch_sub(1, Ordering::Relaxed);
            }
            Ok(())
        })?;
        ok(DeleteObjectOutput::default())
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let i = req.input;
        let max = i.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
        let prefix = i.prefix.clone().unwrap_or_default();
        let after = i
            .continuation_token
            .clone()
            .or(i.start_after.clone())
            .unwrap_or_default();
        let (contents, truncated) = self.0.with_bucket(&i.bucket, |b| {
            // Keys with the prefix are contiguous in key order, from the
            // prefix itself: the page is read from there, never scanning
            // the other keys.
            let from = if after.as_str() >= prefix.as_str() {
                std::ops::Bound::Excluded(&after)
            } else {
                std::ops::Bound::Included(&prefix)
            };
            let mut it = b
                .objects
                .range::<String, _>((from, std::ops::Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(&prefix));
            let page: Vec<Object> = it
                .by_ref()
                .take(max)
                .map(|(k, m)| Object {
                    key: Some(k.clone()),
                    size: Some(m.size as i64),
                    e_tag: Some(etag_of(m.etag, m.parts)),
                    ..Default::default()
                })
                .collect();
            Ok((page, it.next().is_some()))
        })?;
        let next = truncated
            .then(|| contents.last().and_then(|o| o.key.clone()))
            .flatten();
        ok(ListObjectsV2Output {
            name: Some(i.bucket),
            prefix: i.prefix,
            max_keys: Some(max as i32),
            key_count: Some(contents.len() as i32),
            is_truncated: Some(truncated),
            next_continuation_token: next,
            continuation_token: i.continuation_token,
            start_after: i.start_after,
            contents: Some(contents),
            ..Default::default()
        })
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let i = req.input;
        self.0.with_bucket(&i.bucket, |_| Ok(()))?;
        let mut u = self.0.uploads.lock().expect("not poisoned");
        if u.len() >= self.0.max_uploads {
            return Err(s3_error!(
                ServiceUnavailable,
                "the fake server holds at most {} uploads in progress",
                self.0.max_uploads
            ));
        }
        let id = format!(
            "{:016x}",
            wirebench_core::spec::mix64(self.0.next.fetch_add(1, Ordering::Relaxed))
        );
        u.insert(
            id.clone(),
            Upload {
                bucket: i.bucket.clone(),
                key: i.key.clone(),
                parts: BTreeMap::new(),
            },
        );
        ok(CreateMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(id),
            ..Default::default()
        })
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let i = req.input;
        if !(1..=10_000).contains(&i.part_number) {
            return Err(s3_error!(InvalidArgument, "part numbers are 1 to 10000"));
        }
        if !self
            .0
            .uploads
            .lock()
            .expect("not poisoned")
            .contains_key(&i.upload_id)
        {
            return Err(s3_error!(NoSuchUpload));
        }
        let n = drain(i.body, i.content_length, &self.0.counters).await?;
        let mut u = self.0.uploads.lock().expect("not poisoned");
        let up = u
            .get_mut(&i.upload_id)
            .ok_or_else(|| s3_error!(NoSuchUpload))?;
        up.parts.insert(i.part_number, n);
        ok(UploadPartOutput {
            e_tag: Some(part_etag(n, i.part_number)),
            ..Default::default()
        })
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let i = req.input;
        let listed = i.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        // Checked before the upload is taken: a refused completion leaves
        // it to be completed right, as S3 does.
        let mut uploads = self.0.uploads.lock().expect("not poisoned");
        let up = uploads
            .get(&i.upload_id)
            .ok_or_else(|| s3_error!(NoSuchUpload))?;
        if up.bucket != i.bucket || up.key != i.key {
            return Err(s3_error!(NoSuchUpload, "the upload is of another object"));
        }
        if listed.is_empty() {
            return Err(s3_error!(InvalidPart, "no parts listed"));
        }
        let mut size = 0;
        let mut last = 0;
        for p in &listed {
            let n = p.part_number.unwrap_or(0);
            if n <= last {
                return Err(s3_error!(
                    InvalidPartOrder,
                    "part {n} listed after part {last}: list them in ascending order"
                ));
            }
            last = n;
            let Some(&s) = up.parts.get(&n) else {
                return Err(s3_error!(InvalidPart, "part {n} was not uploaded"));
            };
            // The ETag its upload answered, and nothing else.
            let uploaded = part_etag(s, n);
            if p.e_tag.as_ref().map(|e| e.value()) != Some(uploaded.value()) {
                return Err(s3_error!(
                    InvalidPart,
                    "part {n}: its ETag is not the one its upload answered"
                ));
            }
            size += s;
        }
        uploads.remove(&i.upload_id);
        drop(uploads);
        let etag = self
            .0
            .insert(&i.bucket, i.key.clone(), size, listed.len() as u32)?;
        ok(CompleteMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            e_tag: Some(etag),
            ..Default::default()
        })
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.0
            .uploads
            .lock()
            .expect("not poisoned")
            .remove(&req.input.upload_id)
            .ok_or_else(|| s3_error!(NoSuchUpload))?;
        ok(AbortMultipartUploadOutput::default())
    }
}
