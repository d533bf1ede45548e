package awslocal

import (
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
)

func (c *Cloud) describeInstanceTypes(form url.Values) (response, *APIError) {
	type answer struct {
		requestID
		InstanceTypes []instanceTypeXML `xml:"instanceTypeSet>item"`
	}
	out := &answer{}
	var missing []string
	for _, name := range listParam(form, "InstanceType") {
		l, ok := c.opts.InstanceTypes[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		out.InstanceTypes = append(out.InstanceTypes, instanceTypeToXML(name, l))
	}
	if len(missing) > 0 {
		return nil, apiErrorf("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))
	}
	return out, nil
}

func (c *Cloud) describeNetworkInterfaces(form url.Values) (response, *APIError) {
	type answer struct {
		requestID
		NetworkInterfaces []networkInterfaceXML `xml:"networkInterfaceSet>item"`
	}
	ids := listParam(form, "NetworkInterfaceId")
	for _, id := range ids {
		if _, apiErr := c.lookupENI(id); apiErr != nil {
			return nil, apiErr
		}
	}
	filters := filtersParam(form)
	out := &answer{}
	for _, eni := range c.sortedENIs() {
		if len(ids) > 0 && !slices.Contains(ids, eni.id) {
			continue
		}
		ok, apiErr := matchesAll(eni, filters)
		if apiErr != nil {
			return nil, apiErr
		}
		if ok {
			out.NetworkInterfaces = append(out.NetworkInterfaces, c.eniXML(eni))
		}
	}
	return out, nil
}

func (c *Cloud) sortedENIs() []*networkInterface {
	out := make([]*networkInterface, 0, len(c.enis))
	for _, eni := range c.enis {
		out = append(out, eni)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func matchesAll(eni *networkInterface, filters []filter) (bool, *APIError) {
	for _, f := range filters {
		value, present, apiErr := filterValue(eni, f.name)
		if apiErr != nil {
			return false, apiErr
		}
		if !present || !slices.Contains(f.values, value) {
			return false, nil
		}
	}
	return true, nil
}

// filterValue is the ENI's value for a DescribeNetworkInterfaces filter
// name; present is false when the ENI has no such value at all.
func filterValue(eni *networkInterface, name string) (value string, present bool, apiErr *APIError) {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		value, present = eni.tags[key]
		return value, present, nil
	}
	a := eni.attachment
	switch name {
	case "network-interface-id":
		return eni.id, true, nil
	case "subnet-id":
		return eni.subnetID, true, nil
	case "status":
		return eni.status, true, nil
	case "attachment.instance-id":
		if a == nil {
			return "", false, nil
		}
		return a.instanceID, true, nil
	case "attachment.status":
		if a == nil {
			return "", false, nil
		}
		return a.status, true, nil
	case "tag-key":
		return "", false, apiErrorf("InvalidParameterValue", "awslocal does not model the filter 'tag-key'")
	}
	return "", false, apiErrorf("InvalidParameterValue", "The filter '%s' is invalid", name)
}

func (c *Cloud) createNetworkInterface(form url.Values) (response, *APIError) {
	type answer struct {
		requestID
		NetworkInterface networkInterfaceXML `xml:"networkInterface"`
	}
	subnetID, apiErr := requiredParam(form, "SubnetId")
	if apiErr != nil {
		return nil, apiErr
	}
	count, prefixCount, apiErr := addressCounts(form)
	if apiErr != nil {
		return nil, apiErr
	}
	tags, apiErr := tagSpecifications(form, "network-interface")
	if apiErr != nil {
		return nil, apiErr
	}
	var prefixes []netip.Prefix
	if prefixCount > 0 {
		if prefixes, apiErr = c.allocatePrefixes(prefixCount); apiErr != nil {
			return nil, apiErr
		}
	}
	eni, apiErr := c.newENI(subnetID, listParam(form, "SecurityGroupId"), form.Get("Description"), count)
	if apiErr != nil {
		c.releasePrefixes(prefixes...)
		return nil, apiErr
	}
	eni.tags = tags
	eni.ipv4Prefixes = prefixes
	return &answer{NetworkInterface: c.eniXML(eni)}, nil
}

// tagSpecifications reads TagSpecification.N for resourceType.
func tagSpecifications(form url.Values, resourceType string) (map[string]string, *APIError) {
	tags := map[string]string{}
	for i := 1; ; i++ {
		p := "TagSpecification." + itoa(i)
		rt, ok := form[p+".ResourceType"]
		if !ok {
			return tags, nil
		}
		if rt[0] != resourceType {
			return nil, apiErrorf("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt[0])
		}
		for k, v := range tagsParam(form, p+".Tag") {
			tags[k] = v
		}
	}
}

func (c *Cloud) createTags(form url.Values) (response, *APIError) {
	ids := listParam(form, "ResourceId")
	if len(ids) == 0 {
		return nil, apiErrorf("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	var enis []*networkInterface
	for _, id := range ids {
		eni, apiErr := c.lookupENI(id)
		if apiErr != nil {
			return nil, apiErr
		}
		enis = append(enis, eni)
	}
	tags := tagsParam(form, "Tag")
	for _, eni := range enis {
		for k, v := range tags {
			eni.tags[k] = v
		}
	}
	return &returnTrue{Return: true}, nil
}

func (c *Cloud) attachNetworkInterface(form url.Values) (response, *APIError) {
	type answer struct {
		requestID
		AttachmentID     string `xml:"attachmentId"`
		NetworkCardIndex int    `xml:"networkCardIndex"`
	}
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	instanceID := form.Get("InstanceId")
	if instanceID != c.opts.InstanceID {
		return nil, apiErrorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", instanceID)
	}
	deviceIndex, apiErr := intParam(form, "DeviceIndex")
	if apiErr != nil {
		return nil, apiErr
	}
	if apiErr := c.checkAttach(eni, deviceIndex); apiErr != nil {
		return nil, apiErr
	}
	eni.attachment = &attachment{id: c.newID("eni-attach-"), instanceID: instanceID, deviceIndex: deviceIndex, status: "attached"}
	eni.status = "in-use"
	return &answer{AttachmentID: eni.attachment.id}, nil
}

func (c *Cloud) checkAttach(eni *networkInterface, deviceIndex int) *APIError {
	if eni.attachment != nil {
		return apiErrorf("InvalidNetworkInterface.InUse", "Interface: [%s] in use.", eni.id)
	}
	attached := c.attachedENIs()
	for _, other := range attached {
		if other.attachment.deviceIndex == deviceIndex {
			return apiErrorf("InvalidParameterValue", "Instance '%s' already has an interface attached at device index '%d'.", c.opts.InstanceID, deviceIndex)
		}
	}
	limits := c.limits()
	if len(attached) >= limits.MaxENIs {
		return apiErrorf("AttachmentLimitExceeded", "Interface count %d exceeds the limit for %s", len(attached)+1, c.opts.InstanceType)
	}
	if eni.ipCount() > limits.IPv4PerENI {
		return apiErrorf("PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.")
	}
	return nil
}

func (c *Cloud) detachNetworkInterface(form url.Values) (response, *APIError) {
	eni, apiErr := c.eniByAttachment(form.Get("AttachmentId"))
	if apiErr != nil {
		return nil, apiErr
	}
	if eni.attachment.deviceIndex == 0 {
		return nil, apiErrorf("OperationNotPermitted", "The network interface at device index 0 cannot be detached.")
	}
	eni.attachment = nil
	eni.status = "available"
	return &returnTrue{Return: true}, nil
}

func (c *Cloud) deleteNetworkInterface(form url.Values) (response, *APIError) {
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	if eni.attachment != nil {
		return nil, apiErrorf("InvalidNetworkInterface.InUse", "The network interface '%s' is currently in use.", eni.id)
	}
	c.release(eni.primaryIP)
	c.release(eni.secondaryIPs...)
	c.releasePrefixes(eni.ipv4Prefixes...)
	delete(c.enis, eni.id)
	return &returnTrue{Return: true}, nil
}

func (c *Cloud) modifyNetworkInterfaceAttribute(form url.Values) (response, *APIError) {
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	attachmentID := form.Get("Attachment.AttachmentId")
	if attachmentID == "" {
		return nil, apiErrorf("InvalidParameterCombination", "awslocal models only Attachment.DeleteOnTermination")
	}
	if eni.attachment == nil || eni.attachment.id != attachmentID {
		return nil, apiErrorf("InvalidAttachmentID.NotFound", "Interface attachment '%s' does not exist.", attachmentID)
	}
	eni.attachment.deleteOnTermination = form.Get("Attachment.DeleteOnTermination") == "true"
	return &returnTrue{Return: true}, nil
}
